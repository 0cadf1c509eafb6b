import type { Pool } from 'pg';
import { ValidationError } from '@handplane/kernel';
import { query } from './db';
import type { TaskRow } from './task-read';

/** At most this many bytes per response; clients follow `X-Next-Offset`. */
export const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

/** A slice of a command's output and what the client needs to go on. */
export interface OutputSlice {
  bytes: Buffer;
  nextOffset: number;
  resultState: string;
  /** True only when the result is final and readable and this slice reaches its end. */
  complete: boolean;
  /** The range `[from, to)` the output cap dropped (never stored), when it dropped anything. */
  truncated: { from: number; to: number } | null;
}

/** `?offset=N`: absent means 0; anything but a non-negative integer is refused. */
export function parseOffset(raw: unknown): number {
  if (raw === undefined || raw === '') return 0;
  const n = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) throw new ValidationError('offset must be a non-negative integer', [`offset: ${JSON.stringify(raw)} is not a non-negative integer`]);
  return n;
}

/**
 * Reads from the Command Log. Rows are keyed by their first offset and contiguous; the row that
 * holds `from` is sliced, and nothing past a gap is ever returned.
 */
async function readLog(pool: Pool, commandId: string, from: number): Promise<Buffer> {
  const rows = await query<{ offset: string; data: Buffer }>(
    pool,
    `(SELECT "offset", data FROM command_log WHERE command_id = $1 AND "offset" <= $2 ORDER BY "offset" DESC LIMIT 1)
     UNION ALL
     (SELECT "offset", data FROM command_log WHERE command_id = $1 AND "offset" > $2 AND "offset" < $3 ORDER BY "offset")`,
    [commandId, from, from + MAX_OUTPUT_BYTES],
  );
  const parts: Buffer[] = [];
  let pos = from;
  let total = 0;
  for (const row of rows.sort((a, b) => Number(a.offset) - Number(b.offset))) {
    const start = Number(row.offset);
    if (start + row.data.length <= pos) continue;
    if (start > pos || total >= MAX_OUTPUT_BYTES) break;
    const slice = row.data.subarray(pos - start, pos - start + (MAX_OUTPUT_BYTES - total));
    parts.push(slice);
    total += slice.length;
    pos += slice.length;
  }
  return Buffer.concat(parts, total);
}

/**
 * The output of `task` from `rawOffset`, with its result state and whether it is complete.
 * Past the output cap the log has a gap `[dropped_from, dropped_to)`: a read stops at its start, and
 * a read inside it answers no bytes with `nextOffset = dropped_to`, so a client following
 * `X-Next-Offset` walks over the gap to the tail and is told the gap exists (`truncated`).
 */
export async function readOutput(pool: Pool, task: TaskRow, rawOffset: unknown): Promise<OutputSlice> {
  const from = parseOffset(rawOffset);
  const cursors = await query<{ result_state: string; end_offset: string | null; dropped_from: string | null; dropped_to: string | null }>(
    pool,
    'SELECT result_state, end_offset, dropped_from, dropped_to FROM ingest_cursors WHERE command_id = $1',
    [task.command_id],
  );
  const cursor = cursors[0];
  const droppedFrom = cursor?.dropped_from != null ? Number(cursor.dropped_from) : null;
  const droppedTo = cursor?.dropped_to != null ? Number(cursor.dropped_to) : null;
  const truncated = droppedFrom !== null && droppedTo !== null && droppedTo > droppedFrom ? { from: droppedFrom, to: droppedTo } : null;
  const inGap = truncated !== null && from >= truncated.from && from < truncated.to;
  const bytes = inGap ? Buffer.alloc(0) : await readLog(pool, task.command_id, from);
  const resultState = cursor?.result_state ?? task.result_state;
  const nextOffset = inGap ? truncated.to : from + bytes.length;
  const end = cursor?.end_offset != null ? Number(cursor.end_offset) : Number(task.output_bytes);
  const complete = (resultState === 'readable' || resultState === 'delivered') && nextOffset === end;
  return { bytes, nextOffset, resultState, complete, truncated };
}
