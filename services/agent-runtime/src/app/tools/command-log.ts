import type { Pool } from 'pg';

/** The byte range `[from, to)` the output cap dropped from a command's log (never stored). */
export interface DroppedRange {
  readonly from: number;
  readonly to: number;
}

/**
 * Reads up to `cap` bytes of a command's output from the Command Log, starting at `offset`.
 * Chunks are keyed by their first offset; only those overlapping the range are fetched. A read
 * stops at a gap (bytes not durable yet, or the start of the range the output cap dropped); a read
 * inside the dropped range returns no bytes and `nextOffset` at its end, so following `nextOffset`
 * walks over it. `dropped` names that range whenever the output has one.
 */
export async function readCommandLog(pool: Pool, commandId: string, offset: number, cap: number): Promise<{ bytes: Buffer; nextOffset: number; dropped?: DroppedRange }> {
  const c = await pool.query<{ dropped_from: string | null; dropped_to: string | null }>('SELECT dropped_from, dropped_to FROM ingest_cursors WHERE command_id = $1', [commandId]);
  const from = c.rows[0]?.dropped_from;
  const to = c.rows[0]?.dropped_to;
  const dropped = from != null && to != null && Number(to) > Number(from) ? { from: Number(from), to: Number(to) } : undefined;
  if (dropped && offset >= dropped.from && offset < dropped.to) return { bytes: Buffer.alloc(0), nextOffset: dropped.to, dropped };
  const r = await pool.query<{ offset: string; data: Buffer }>(
    `SELECT "offset", data FROM command_log
      WHERE command_id = $1 AND "offset" < $2::bigint + $3::bigint AND "offset" + octet_length(data) > $2::bigint
      ORDER BY "offset"`,
    [commandId, offset, cap],
  );
  const parts: Buffer[] = [];
  let pos = offset;
  for (const row of r.rows) {
    const start = Number(row.offset);
    if (start > pos) break; // a gap: the bytes after it are not durable yet (or were dropped)
    const skip = pos - start;
    const take = Math.min(row.data.length - skip, cap - (pos - offset));
    if (take <= 0) continue;
    parts.push(row.data.subarray(skip, skip + take));
    pos += take;
    if (pos - offset >= cap) break;
  }
  return { bytes: Buffer.concat(parts), nextOffset: pos, ...(dropped ? { dropped } : {}) };
}

/**
 * The length of `bytes` without a UTF-8 sequence cut at its end, so a capped read does not end
 * in a replacement character the next read would repeat. Bytes that are not UTF-8 stay as they are.
 */
export function utf8SafeLength(bytes: Buffer): number {
  for (let back = 1; back <= Math.min(3, bytes.length); back++) {
    const b = bytes[bytes.length - back]!;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: look further back
    const need = b >= 0xf8 ? 1 : b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? bytes.length - back : bytes.length;
  }
  return bytes.length;
}

/** How many continuation bytes open `bytes` (a tail read that starts inside a character), at most 3. */
export function utf8SafeStart(bytes: Buffer): number {
  let i = 0;
  while (i < 3 && i < bytes.length && (bytes[i]! & 0xc0) === 0x80) i++;
  return i;
}

/** Text for display: invalid sequences become U+FFFD (the log itself keeps every byte). */
export function displayText(bytes: Buffer): string {
  return bytes.toString('utf8');
}
