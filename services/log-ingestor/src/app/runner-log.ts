import type { ClientReadableStream } from '@grpc/grpc-js';
import type { LogRecord } from '@handplane/proto';

/** What `next` can answer: a record, a timeout (no record within the wait), or the end of the stream. */
export type NextRecord = { kind: 'record'; record: LogRecord } | { kind: 'timeout' } | { kind: 'end' };

const HIGH_WATER = 32;
const LOW_WATER = 8;

/**
 * A pull interface over a `ReadLog` server stream, with a wait limit (the batcher's flush timer)
 * and back-pressure: the stream is paused while the reader is behind (grpc flow control then slows
 * the runner), so a slow Postgres never buffers a command's output in memory.
 */
export class RunnerLogStream {
  private readonly queue: LogRecord[] = [];
  private ended = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;

  constructor(private readonly call: ClientReadableStream<LogRecord>) {
    call.on('data', (r: LogRecord) => {
      this.queue.push(r);
      if (this.queue.length >= HIGH_WATER) call.pause();
      this.notify();
    });
    call.on('end', () => {
      this.ended = true;
      this.notify();
    });
    call.on('error', (e: Error) => {
      this.failure = e;
      this.notify();
    });
  }

  /** The next record; waits at most `waitMs` when given. Throws the stream's error once the queue is drained. */
  async next(waitMs?: number): Promise<NextRecord> {
    for (;;) {
      const r = this.queue.shift();
      if (r) {
        if (this.queue.length <= LOW_WATER && this.call.isPaused()) this.call.resume();
        return { kind: 'record', record: r };
      }
      if (this.failure) throw this.failure;
      if (this.ended) return { kind: 'end' };
      if (waitMs !== undefined && waitMs <= 0) return { kind: 'timeout' };
      const timedOut = await this.waitForData(waitMs);
      if (timedOut) return { kind: 'timeout' };
    }
  }

  /** Stops the server stream (the runner sees the call cancelled). */
  cancel(): void {
    this.call.cancel();
  }

  private waitForData(waitMs?: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = waitMs === undefined ? undefined : setTimeout(() => done(true), waitMs);
      const done = (timedOut: boolean) => {
        if (timer) clearTimeout(timer);
        this.wake = null;
        resolve(timedOut);
      };
      this.wake = () => done(false);
    });
  }

  private notify(): void {
    this.wake?.();
  }
}
