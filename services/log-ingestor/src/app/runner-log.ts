import type { ClientReadableStream } from '@grpc/grpc-js';
import type { LogRecord } from '@handplane/proto';

/** What `next` can answer: a record, a timeout (no record within the wait), or the end of the stream. */
export type NextRecord = { kind: 'record'; record: LogRecord } | { kind: 'timeout' } | { kind: 'end' };

const recordBytes = (r: LogRecord) => (r.record?.$case === 'chunk' ? r.record.value.data.length : 0);

/**
 * A pull interface over a `ReadLog` server stream, with a wait limit (the batcher's flush timer)
 * and back-pressure by bytes: the stream is paused while `highWaterBytes` wait here (grpc flow
 * control then slows the runner) and resumed below a quarter of it, so a slow Postgres never buffers
 * a command's output in memory, whatever the size of the runner's records.
 */
export class RunnerLogStream {
  private readonly queue: LogRecord[] = [];
  private bytes = 0;
  private ended = false;
  private failure: Error | null = null;
  private wake: (() => void) | null = null;

  constructor(
    private readonly call: ClientReadableStream<LogRecord>,
    private readonly highWaterBytes = 1024 * 1024,
  ) {
    call.on('data', (r: LogRecord) => {
      this.queue.push(r);
      this.bytes += recordBytes(r);
      if (this.bytes >= this.highWaterBytes) call.pause();
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

  /** Output bytes received and not yet taken by `next`. */
  get queuedBytes(): number {
    return this.bytes;
  }

  /** The next record; waits at most `waitMs` when given. Throws the stream's error once the queue is drained. */
  async next(waitMs?: number): Promise<NextRecord> {
    for (;;) {
      const r = this.queue.shift();
      if (r) {
        this.bytes -= recordBytes(r);
        if (this.bytes <= this.highWaterBytes / 4 && this.call.isPaused()) this.call.resume();
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
