import type { FileHandle } from 'node:fs/promises';
import { encodeRecord, RECORD_BYTES, type SpoolRecord } from './spool-records';
import type { StreamName } from './types';

/** Above this many queued bytes the writer asks for the child's pipes to be paused. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

export interface SpoolWriterEvents {
  /** Bytes and records up to `offset` are on disk (not necessarily fsynced). */
  onWritten(offset: number, records: number): void;
  /** True: pause reading the child's output; false: resume. Keeps memory bounded. */
  onPressure(paused: boolean): void;
  /** A write failed (disk full, …): nothing more will be spooled. */
  onFailed(err: Error): void;
}

/**
 * Appends output pieces to output.bin and their records to records.bin in arrival order.
 * Offsets are assigned when a piece arrives; a reader only ever sees what `onWritten` reported,
 * and the bytes are always written before the records describing them.
 */
export class SpoolWriter {
  private queue: { stream: StreamName; data: Buffer }[] = [];
  private queuedBytes = 0;
  private flushing: Promise<void> | null = null;
  private paused = false;
  private failure: Error | null = null;
  private written: number;
  private recordCount: number;

  constructor(
    private readonly output: FileHandle,
    private readonly records: FileHandle,
    private readonly events: SpoolWriterEvents,
    start = { offset: 0, records: 0 },
  ) {
    this.written = start.offset;
    this.recordCount = start.records;
  }

  get error(): Error | null {
    return this.failure;
  }

  append(stream: StreamName, data: Buffer): void {
    if (data.length === 0 || this.failure) return;
    this.queue.push({ stream, data });
    this.queuedBytes += data.length;
    if (!this.paused && this.queuedBytes > HIGH_WATER) this.setPaused(true);
    if (!this.flushing) this.flushing = this.flushLoop();
  }

  /** Resolves when everything appended so far is written (or the writer failed). */
  async drain(): Promise<void> {
    for (let f = this.flushing; f; f = this.flushing === f ? null : this.flushing) await f;
  }

  /** Makes what is written durable: the exit record is only written after this. */
  async sync(): Promise<void> {
    await this.drain();
    await Promise.all([this.output.sync(), this.records.sync()]);
  }

  async close(): Promise<void> {
    await this.drain();
    await Promise.allSettled([this.output.close(), this.records.close()]);
  }

  private setPaused(paused: boolean): void {
    this.paused = paused;
    this.events.onPressure(paused);
  }

  // `flushing` is cleared in the same tick the loop sees an empty queue (no await in between),
  // so an append that arrives later always starts a new loop.
  private async flushLoop(): Promise<void> {
    try {
      while (this.queue.length > 0 && !this.failure) await this.writeBatch();
    } finally {
      this.flushing = null;
      // A failed writer must not keep the child blocked on a paused pipe.
      if (this.failure && this.paused) this.setPaused(false);
    }
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue;
    this.queue = [];
    const bytes = Buffer.concat(batch.map((p) => p.data));
    const records = coalesce(batch, this.written);
    const recs = Buffer.allocUnsafe(records.length * RECORD_BYTES);
    records.forEach((r, i) => encodeRecord(r, recs, i * RECORD_BYTES));
    const offset = this.written + bytes.length;
    try {
      await writeAll(this.output, bytes, this.written);
      await writeAll(this.records, recs, this.recordCount * RECORD_BYTES);
    } catch (e) {
      this.failure = e as Error;
      this.queue = [];
      this.events.onFailed(this.failure);
      return;
    }
    this.written = offset;
    this.recordCount += records.length;
    this.queuedBytes -= bytes.length;
    this.events.onWritten(this.written, this.recordCount);
    if (this.paused && this.queuedBytes < LOW_WATER) this.setPaused(false);
  }
}

async function writeAll(fh: FileHandle, buf: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < buf.length) {
    const { bytesWritten } = await fh.write(buf, done, buf.length - done, position + done);
    done += bytesWritten;
  }
}

/** Pieces of the same stream that arrived back to back share one record (records only mark where the stream changes). */
function coalesce(batch: readonly { stream: StreamName; data: Buffer }[], start: number): SpoolRecord[] {
  const out: { offset: number; length: number; stream: StreamName }[] = [];
  let offset = start;
  for (const p of batch) {
    const last = out[out.length - 1];
    if (last && last.stream === p.stream) last.length += p.data.length;
    else out.push({ offset, length: p.data.length, stream: p.stream });
    offset += p.data.length;
  }
  return out;
}
