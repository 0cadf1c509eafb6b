import { ackRunner } from './commit-batch';
import type { IngestorDeps } from './deps';

/**
 * The Acks of one command to its runner, sent after each commit without making the reader wait for
 * the round trip: at most one Ack in flight, later offsets coalesce into the next one, and offsets
 * only grow. An Ack is a hint (the runner may free spool space below it), so a lost one costs nothing.
 */
export class RunnerAcks {
  private wanted = 0;
  private sent = 0;
  private inFlight: Promise<void> | null = null;

  constructor(
    private readonly deps: IngestorDeps,
    private readonly address: string,
    private readonly commandId: string,
  ) {}

  /** Everything below `offset` is committed. */
  send(offset: number): void {
    if (offset <= this.wanted) return;
    this.wanted = offset;
    this.inFlight ??= this.drain();
  }

  /** Waits until the last wanted offset was sent. */
  async settled(): Promise<void> {
    await this.inFlight;
  }

  private async drain(): Promise<void> {
    while (this.wanted > this.sent) {
      const offset = this.wanted;
      await ackRunner(this.deps, this.address, this.commandId, offset);
      this.sent = offset;
    }
    this.inFlight = null;
  }
}
