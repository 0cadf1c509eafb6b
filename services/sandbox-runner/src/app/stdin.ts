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

/**
 * The write end of one command's standard input (a pipe the runner holds; the command's fd 0 is the
 * other end). Open from the launch until `close`, the command's exit, or the runner's own exit: the
 * pipe lives in this process, so a command re-adopted by a restarted runner has already read
 * end-of-file and its stdin counts as closed (`closedReason` says why).
 */
export class CommandStdin {
  private total = 0;
  private why: string | null;

  constructor(
    private readonly stream: Writable | null,
    closedReason = 'the command has no stdin pipe',
  ) {
    this.why = stream ? null : closedReason;
    // EPIPE when the command closed its stdin or ended: never an unhandled error in the runner.
    stream?.on('error', (err: Error) => this.markClosed(`the command stopped reading its stdin (${(err as NodeJS.ErrnoException).code ?? err.message})`));
  }

  /** A stdin whose pipe this runner does not hold. */
  static closed(reason: string): CommandStdin {
    return new CommandStdin(null, reason);
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
   * when the command has not read what was written before (back-pressure; retry later).
   */
  write(data: Buffer, close: boolean): StdinWriteResult {
    if (this.why !== null || !this.stream) {
      if (data.length === 0 && close) return { written: 0, closed: true, totalWritten: this.total };
      throw new IllegalState(`stdin is closed: ${this.why ?? 'no pipe'}`);
    }
    if (data.length > 0 && this.stream.writableLength + data.length > STDIN_MAX_PENDING_BYTES) {
      throw new Conflict(`stdin_full: ${this.stream.writableLength} bytes written earlier are still waiting for the command to read them (limit ${STDIN_MAX_PENDING_BYTES}); nothing was written`);
    }
    if (data.length > 0) this.stream.write(data);
    this.total += data.length;
    if (close) {
      this.stream.end();
      this.markClosed('closed on request');
    }
    return { written: data.length, closed: close, totalWritten: this.total };
  }

  /** Drops the pipe (the command ended, or the runner detaches from it). */
  destroy(reason: string): void {
    this.markClosed(reason);
    this.stream?.destroy();
  }

  private markClosed(reason: string): void {
    this.why ??= reason;
  }
}
