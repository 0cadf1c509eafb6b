import { commitBatch, inForegroundWindow, publishLive } from './commit-batch';
import type { LiveText } from './live-text';
import type { LogPiece } from './log-tiling';
import type { ReadContext } from './read-store';

/**
 * Commits a command's batches one at a time while the reader fills the next one: reading from the
 * runner and writing to the stores overlap, and still only one transaction per command is open, in
 * offset order (each starts from the cursor the previous one committed). A failed commit is kept
 * and thrown to the reader at its next step, never left unobserved.
 */
export class CommitPipeline {
  private inFlight: Promise<void> | null = null;
  private failure: { error: unknown } | null = null;
  private inFlightBytes = 0;

  constructor(
    private readonly ctx: ReadContext,
    private readonly live: LiveText,
  ) {}

  /** True while a commit runs. */
  get busy(): boolean {
    return this.inFlight !== null;
  }

  /** Bytes of the batch being committed (they are still in memory). */
  get bytesInFlight(): number {
    return this.inFlightBytes;
  }

  /** Throws the error of a commit that already failed. */
  throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }

  /** Waits for the commit in flight (throwing its error), then starts this one without waiting for it. */
  async submit(from: number, to: number, rows: LogPiece[], final: boolean): Promise<void> {
    await this.settled();
    this.inFlightBytes = to - from;
    this.inFlight = this.commit(from, to, rows, final).then(
      () => {
        this.inFlightBytes = 0;
        this.inFlight = null;
      },
      (error: unknown) => {
        this.inFlightBytes = 0;
        this.inFlight = null;
        this.failure = { error };
      },
    );
  }

  /** Waits until no commit runs; throws when one failed. */
  async settled(): Promise<void> {
    await this.inFlight;
    this.throwIfFailed();
  }

  private async commit(from: number, to: number, rows: LogPiece[], final: boolean): Promise<void> {
    const { deps, cur, acks } = this.ctx;
    if (rows.length > 0) {
      await commitBatch(deps, cur, rows, to);
      acks.send(to);
    }
    // Outside the window nothing is shown: do not even join the rows.
    if (!inForegroundWindow(deps, cur)) return;
    const data = rows.length === 1 ? rows[0]!.data : Buffer.concat(rows.map((r) => r.data));
    await publishLive(deps, cur, this.live, from, data, final);
  }
}
