import type { FileHandle } from 'node:fs/promises';
import { OffsetOutOfRange, OffsetReleased } from './errors';
import type { Command } from './command';
import { readExactly, RecordReader } from './spool-records';
import type { LogItem, StreamName } from './types';

/** The runner never sends a chunk larger than this, whatever the reader asks. */
export const MAX_CHUNK_BYTES = 64 * 1024;

export interface ReadLogOptions {
  readonly fromOffset: number;
  readonly follow: boolean;
  /** 0 = MAX_CHUNK_BYTES. */
  readonly maxChunkBytes: number;
  /** Aborted when the reader goes away: the generator then returns at its next step. */
  readonly signal: AbortSignal;
}

/** Throws OUT_OF_RANGE before any file is opened, so the caller can fail the call at once. */
export function checkReadable(cmd: Command, fromOffset: number, follow: boolean): void {
  const released = cmd.meta.freedOffset ?? 0;
  if (fromOffset < released) throw new OffsetReleased(fromOffset, released);
  const available = cmd.exit?.endOffset ?? cmd.written;
  // A follower may wait for a running command to reach its offset; nobody else may ask past the end.
  if (fromOffset > available && (cmd.exit || !follow)) throw new OffsetOutOfRange(fromOffset, available, 'fromOffset');
}

/**
 * Output of one command from `fromOffset`, read from the spool files (so it works for commands
 * of an earlier boot too). Chunks hold one stream each and carry their exact offset; with
 * `follow` it waits for more output until the exit record, which comes last. Pull-based: the
 * next chunk is read from disk only when the consumer asks, so memory stays at one chunk.
 */
export async function* readLog(cmd: Command, opts: ReadLogOptions): AsyncGenerator<LogItem, void, undefined> {
  checkReadable(cmd, opts.fromOffset, opts.follow);
  const limit = Math.min(opts.maxChunkBytes || MAX_CHUNK_BYTES, MAX_CHUNK_BYTES);
  const files = await cmd.spool.openForRead();
  try {
    const records = new RecordReader(files.records);
    let pos = opts.fromOffset;
    let index = -1;
    for (;;) {
      // Subscribe before looking, so output that lands in between still wakes us.
      const changed = opts.follow && !cmd.exit ? cmd.changed(opts.signal) : null;
      const exit = cmd.exit;
      const available = exit ? exit.endOffset : cmd.written;
      const count = cmd.records;
      while (pos < available) {
        if (opts.signal.aborted) return;
        if (index < 0) index = await records.find(pos, count);
        const chunk = await nextChunk(records, files.output, { pos, index, count, available, limit });
        pos += chunk.data.length;
        index = chunk.nextIndex;
        yield { type: 'chunk', offset: chunk.offset, stream: chunk.stream, data: chunk.data };
      }
      if (exit) {
        if (pos > exit.endOffset) throw new OffsetOutOfRange(pos, exit.endOffset, 'fromOffset');
        yield { type: 'exit', exit };
        return;
      }
      if (!changed || opts.signal.aborted) return;
      await changed;
      if (opts.signal.aborted) return;
    }
  } finally {
    await Promise.allSettled([files.output.close(), files.records.close()]);
  }
}

interface ChunkCursor {
  readonly pos: number;
  /** Record holding `pos`. */
  readonly index: number;
  /** Records known complete. */
  readonly count: number;
  /** Bytes known complete (a record boundary). */
  readonly available: number;
  readonly limit: number;
}

/**
 * The chunk at `pos`: the rest of record `index` merged with the following records of the same
 * stream, up to `limit` bytes. A chunk never crosses into the other stream.
 */
async function nextChunk(records: RecordReader, output: FileHandle, c: ChunkCursor): Promise<{ offset: number; stream: StreamName; data: Buffer; nextIndex: number }> {
  let i = c.index;
  let rec = await records.get(i, c.count);
  const stream = rec.stream;
  const maxStop = Math.min(c.pos + c.limit, c.available);
  let stop = Math.min(rec.offset + rec.length, maxStop);
  while (stop === rec.offset + rec.length && stop < maxStop && i + 1 < c.count) {
    const next = await records.get(i + 1, c.count);
    if (next.stream !== stream) break;
    i++;
    rec = next;
    stop = Math.min(rec.offset + rec.length, maxStop);
  }
  const data = await readExactly(output, c.pos, stop - c.pos);
  return { offset: c.pos, stream, data, nextIndex: stop === rec.offset + rec.length ? i + 1 : i };
}
