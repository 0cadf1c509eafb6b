import type { Writable } from 'node:stream';
import { Conflict, IllegalState } from '@handplane/kernel';

/** Largest WriteStdin payload (one call). Bigger input is sent in several calls. */
export const STDIN_MAX_WRITE_BYTES = 64 * 1024;
/**
 * Input accepted but not yet taken by the kernel (the command is not reading). Past this, writes are
 * refused until the command reads: the runner never buffers without bound for a command that waits
 * for something else.
 */
export const STDIN_MAX_PENDING_BYTES = 256 * 1024;

/** What a WriteStdin did. */
export interface StdinWriteResult {
  readonly written: number;
  readonly closed: boolean;
  readonly totalWritten: number;
}

/** What a FIFO-backed stdin tells its command's process about (both optional: a plain pipe needs neither). */
export interface StdinHooks {
  /** Saves `{closed, bytes}` (meta.json) before the write is answered, so a restarted runner goes on from there. */
  readonly persist?: (state: { closed: boolean; bytes: number }) => Promise<void>;
  /** Makes the sandbox init drop its writer on the FIFO (after a close), so the command reads end-of-file. */
  readonly release?: () => void;
}

/**
 * The write end of one command's standard input. Either a pipe this runner holds (the command's fd 0
 * is the other end: it reads end-of-file when this runner process ends), or, since stdin survives
 * runner restarts, a FIFO in the spool directory that the sandbox init also holds a writer on: the
 * command reads end-of-file only once it is closed on request (this end closed, the init told to drop
 * its own), and a restarted runner opens the FIFO again and goes on counting from the saved total.
 * `closedReason` says why it is closed.
 */
export class CommandStdin {
  private total: number;
  private why: string | null;

  constructor(
    private readonly stream: Writable | null,
    closedReason = 'the command has no stdin pipe',
    private readonly hooks: StdinHooks = {},
    alreadyWritten = 0,
  ) {
    this.total = alreadyWritten;
    this.why = stream ? null : closedReason;
    // EPIPE when the command closed its stdin or ended: never an unhandled error in the runner.
    stream?.on('error', (err: Error) => this.markClosed(`the command stopped reading its stdin (${(err as NodeJS.ErrnoException).code ?? err.message})`));
  }

  /** A stdin whose pipe this runner does not hold. */
  static closed(reason: string, alreadyWritten = 0): CommandStdin {
    return new CommandStdin(null, reason, {}, alreadyWritten);
  }

  get closedReason(): string | null {
    return this.why;
  }

  get totalWritten(): number {
    return this.total;
  }

  /**
   * Writes `data` (then closes when `close`). Throws IllegalState when stdin is already closed (a
   * close-only request on a closed stdin is answered as done: closing twice is harmless), Conflict
   * when the command has not read what was written before (back-pressure; retry later). The new
   * state is saved before the answer (a close is saved before the command is let see end-of-file).
   */
  async write(data: Buffer, close: boolean): Promise<StdinWriteResult> {
    if (this.why !== null || !this.stream) {
      if (data.length === 0 && close) return { written: 0, closed: true, totalWritten: this.total };
      throw new IllegalState(`stdin is closed: ${this.why ?? 'no pipe'}`);
    }
    if (data.length > 0 && this.stream.writableLength + data.length > STDIN_MAX_PENDING_BYTES) {
      throw new Conflict(`stdin_full: ${this.stream.writableLength} bytes written earlier are still waiting for the command to read them (limit ${STDIN_MAX_PENDING_BYTES}); nothing was written`);
    }
    if (data.length > 0) this.stream.write(data);
    this.total += data.length;
    if (close) this.markClosed('closed on request');
    await this.hooks.persist?.({ closed: close, bytes: this.total });
    if (close) {
      this.stream.end();
      this.hooks.release?.();
    }
    return { written: data.length, closed: close, totalWritten: this.total };
  }

  /**
   * The runner detaches (it stops; the command goes on). A FIFO's queued bytes are flushed into the
   * FIFO first, for at most `timeoutMs` (the command must read to make room), then this end is closed:
   * the init's writer keeps the command from reading end-of-file. Answers how many accepted bytes
   * could not be flushed (lost with this process). A plain pipe is dropped at once (its command
   * reads end-of-file whatever is done).
   */
  async detach(timeoutMs: number): Promise<number> {
    const s = this.stream;
    if (!s || !this.hooks.persist || s.destroyed || s.writableFinished) {
      this.destroy('the runner detached from the command');
      return 0;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      s.once('close', () => (clearTimeout(timer), resolve()));
      s.once('error', () => (clearTimeout(timer), resolve()));
      s.end(() => (clearTimeout(timer), resolve()));
    });
    const left = s.writableFinished ? 0 : s.writableLength;
    this.destroy('the runner detached from the command');
    return left;
  }

  /** Drops this runner's end (the command ended, or the runner detaches: a FIFO's init writer stays). */
  destroy(reason: string): void {
    this.markClosed(reason);
    this.stream?.destroy();
  }

  private markClosed(reason: string): void {
    this.why ??= reason;
  }
}
