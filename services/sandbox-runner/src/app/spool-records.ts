import type { FileHandle } from 'node:fs/promises';
import type { StreamName } from './types';

/**
 * `records.bin`: one fixed-size record per appended piece of output (pieces of one stream that are
 * appended back to back in the same write share a record), in arrival order:
 * offset (u64 BE), length (u32 BE), stream (u8: 1 stdout, 2 stderr), 3 reserved bytes.
 * Fixed size lets a reader binary-search an offset without holding an index in memory.
 */
export const RECORD_BYTES = 16;
const BATCH = 256;

export interface SpoolRecord {
  readonly offset: number;
  readonly length: number;
  readonly stream: StreamName;
}

export function encodeRecord(r: SpoolRecord, into: Buffer, at: number): void {
  into.writeBigUInt64BE(BigInt(r.offset), at);
  into.writeUInt32BE(r.length, at + 8);
  into.writeUInt8(r.stream === 'stdout' ? 1 : 2, at + 12);
  into.fill(0, at + 13, at + RECORD_BYTES);
}

function decodeRecord(buf: Buffer, at: number): SpoolRecord {
  return { offset: Number(buf.readBigUInt64BE(at)), length: buf.readUInt32BE(at + 8), stream: buf.readUInt8(at + 12) === 1 ? 'stdout' : 'stderr' };
}

/** Reads exactly `length` bytes at `position` (a short read means the file is shorter: an error). */
export async function readExactly(fh: FileHandle, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`spool file ends at ${position + done}, expected ${position + length}`);
    done += bytesRead;
  }
  return buf;
}

/** Random access to records.bin with a small read-ahead window (bounded memory). */
export class RecordReader {
  private cacheStart = 0;
  private cache: SpoolRecord[] = [];

  constructor(private readonly fh: FileHandle) {}

  /** Record `i`, which must be below `count` (the records known to be complete). */
  async get(i: number, count: number): Promise<SpoolRecord> {
    if (i < this.cacheStart || i >= this.cacheStart + this.cache.length) {
      const n = Math.min(BATCH, count - i);
      const buf = await readExactly(this.fh, i * RECORD_BYTES, n * RECORD_BYTES);
      this.cache = Array.from({ length: n }, (_, k) => decodeRecord(buf, k * RECORD_BYTES));
      this.cacheStart = i;
    }
    return this.cache[i - this.cacheStart];
  }

  /** Index of the record holding byte `offset` among the first `count`, or `count` when past them. */
  async find(offset: number, count: number): Promise<number> {
    let lo = 0;
    let hi = count;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const r = await this.get(mid, count);
      if (r.offset + r.length <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/**
 * After a crash, output.bin may hold bytes that have no record yet, and records.bin a torn last
 * record. The valid spool is the longest prefix of complete records whose bytes are all present.
 */
export async function validPrefix(records: FileHandle, outputSize: number): Promise<{ count: number; endOffset: number }> {
  const size = (await records.stat()).size;
  let count = Math.floor(size / RECORD_BYTES);
  const reader = new RecordReader(records);
  while (count > 0) {
    const last = await reader.get(count - 1, count);
    if (last.offset + last.length <= outputSize) return { count, endOffset: last.offset + last.length };
    count--;
  }
  return { count: 0, endOffset: 0 };
}

/** Bytes of each stream among the first `count` records: where a re-adopted command's raw files were consumed up to. */
export async function streamTotals(records: FileHandle, count: number): Promise<{ stdout: number; stderr: number }> {
  const totals = { stdout: 0, stderr: 0 };
  const reader = new RecordReader(records);
  for (let i = 0; i < count; i++) {
    const r = await reader.get(i, count);
    totals[r.stream] += r.length;
  }
  return totals;
}
