import type { Pool, PoolClient } from 'pg';
import type { LogPiece } from './log-tiling';

/**
 * SQL of the ingestor's own tables: `ingest_cursors` (committed cursor, lease, result state) and
 * `command_log` (the bytes). Offsets are bigint: pg returns them as strings, converted here.
 */

/**
 * The range the output cap drops: `[from, to)`; `to` grows while the ingestor reads past the head,
 * and is fixed (`final`) once the exit record showed where the kept tail starts.
 */
export interface DroppedRange {
  readonly from: number;
  to: number;
  final: boolean;
}

/** One command the ingestor follows, as a worker holds it. */
export interface Cursor {
  readonly commandId: string;
  readonly taskId: string;
  readonly conversationId: string;
  readonly attempt: number;
  readonly runnerId: string;
  /** Everything below is settled: stored in `command_log` and LOGS, or inside `drop`. */
  committedOffset: number;
  /** LOGS sequence of the last chunk a committed batch published (null: none yet). */
  logsSeq: number | null;
  drop: DroppedRange | null;
  readonly foregroundUntil: Date | null;
}

interface CursorRow {
  command_id: string;
  task_id: string;
  conversation_id: string;
  attempt: number;
  runner_id: string;
  committed_offset: string;
  logs_seq: string | null;
  dropped_from: string | null;
  dropped_to: string | null;
  drop_final: boolean;
  foreground_until: Date | null;
}

const CURSOR_COLUMNS = 'command_id, task_id, conversation_id, attempt, runner_id, committed_offset, logs_seq, dropped_from, dropped_to, drop_final, foreground_until';

const toCursor = (r: CursorRow): Cursor => ({
  commandId: r.command_id,
  taskId: r.task_id,
  conversationId: r.conversation_id,
  attempt: r.attempt,
  runnerId: r.runner_id,
  committedOffset: Number(r.committed_offset),
  logsSeq: r.logs_seq === null ? null : Number(r.logs_seq),
  drop: r.dropped_from === null ? null : { from: Number(r.dropped_from), to: Number(r.dropped_to ?? r.dropped_from), final: r.drop_final },
  foregroundUntil: r.foreground_until,
});

/** A new command to follow; a redelivered TaskStarted finds the row there and changes nothing. */
export async function insertCursor(
  pool: Pool,
  c: { commandId: string; taskId: string; conversationId: string; attempt: number; runnerId: string; foregroundUntil: Date },
): Promise<boolean> {
  const r = await pool.query(
    `INSERT INTO ingest_cursors (command_id, task_id, conversation_id, attempt, runner_id, foreground_until)
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (command_id) DO NOTHING`,
    [c.commandId, c.taskId, c.conversationId, c.attempt, c.runnerId, c.foregroundUntil],
  );
  return (r.rowCount ?? 0) > 0;
}

/**
 * Takes up to `limit` pending commands whose lease is free or expired. SKIP LOCKED plus the lease
 * re-check on the locked row (READ COMMITTED re-evaluates it) means two instances never both win one.
 */
export async function claimCursors(pool: Pool, owner: string, leaseMs: number, limit: number): Promise<Cursor[]> {
  const r = await pool.query<CursorRow>(
    `UPDATE ingest_cursors SET owner = $1, lease_until = now() + make_interval(secs => $2::double precision / 1000), updated_at = now()
     WHERE command_id IN (
       SELECT command_id FROM ingest_cursors
       WHERE result_state = 'result_pending' AND (lease_until IS NULL OR lease_until < now())
       ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)
     AND result_state = 'result_pending' AND (lease_until IS NULL OR lease_until < now())
     RETURNING ${CURSOR_COLUMNS}`,
    [owner, leaseMs, limit],
  );
  return r.rows.map(toCursor);
}

/** Extends the leases this owner still holds; returns the command ids it still holds. */
export async function renewLeases(pool: Pool, owner: string, commandIds: string[], leaseMs: number): Promise<Set<string>> {
  if (commandIds.length === 0) return new Set();
  const r = await pool.query<{ command_id: string }>(
    `UPDATE ingest_cursors SET lease_until = now() + make_interval(secs => $3::double precision / 1000)
     WHERE command_id = ANY($1::text[]) AND owner = $2 AND result_state = 'result_pending'
     RETURNING command_id`,
    [commandIds, owner, leaseMs],
  );
  return new Set(r.rows.map((x) => x.command_id));
}

/**
 * Moves the committed cursor from `from` to `to` and renews the lease, inside the batch's transaction.
 * Runs first so the row stays locked until commit. False: the lease (or the cursor) is no longer ours.
 */
export async function advanceCursor(c: PoolClient, a: { commandId: string; owner: string; from: number; to: number; leaseMs: number }): Promise<boolean> {
  const r = await c.query(
    `UPDATE ingest_cursors SET committed_offset = $4, lease_until = now() + make_interval(secs => $5::double precision / 1000), last_error = NULL, updated_at = now()
     WHERE command_id = $1 AND owner = $2 AND committed_offset = $3 AND result_state = 'result_pending'`,
    [a.commandId, a.owner, a.from, a.to, a.leaseMs],
  );
  return r.rowCount === 1;
}

/** Remembers the LOGS sequence of the batch's last chunk, inside the batch's transaction (the row is already locked). */
export async function recordLogsSeq(c: PoolClient, commandId: string, seq: number): Promise<void> {
  await c.query('UPDATE ingest_cursors SET logs_seq = GREATEST(COALESCE(logs_seq, 0), $2) WHERE command_id = $1', [commandId, seq]);
}

/** Stores output rows; a row already there (a replayed chunk) is left as it is. */
export async function insertLogRows(c: PoolClient, commandId: string, rows: readonly LogPiece[]): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [commandId];
  const values = rows.map((row) => {
    params.push(row.offset, row.stream, Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength));
    const n = params.length;
    return `($1, $${n - 2}, $${n - 1}, $${n})`;
  });
  await c.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ${values.join(', ')} ON CONFLICT DO NOTHING`, params);
}

/** Records the settled result; false when another owner holds the row now. */
export async function settleCursor(
  pool: Pool,
  s: { commandId: string; owner: string; state: 'readable' | 'unavailable'; endOffset: number | null; exitCode: number | null; signal: string | null; lastError?: string },
): Promise<boolean> {
  // A result already marked delivered stays delivered (MarkDelivered may overtake a replayed settle).
  const r = await pool.query(
    `UPDATE ingest_cursors SET result_state = CASE WHEN result_state = 'delivered' THEN result_state ELSE $3 END,
       end_offset = $4, exit_code = $5, signal = $6, last_error = $7, owner = NULL, lease_until = NULL, updated_at = now()
     WHERE command_id = $1 AND owner = $2`,
    [s.commandId, s.owner, s.state, s.endOffset, s.exitCode, s.signal, s.lastError ?? null],
  );
  return r.rowCount === 1;
}

/** Gives a failing command back, not to be claimed again for `retryInMs`, with the reason. */
export async function releaseWithError(pool: Pool, commandId: string, owner: string, retryInMs: number, error: string): Promise<void> {
  await pool.query(
    `UPDATE ingest_cursors SET owner = NULL, lease_until = now() + make_interval(secs => $3::double precision / 1000), last_error = $4, updated_at = now()
     WHERE command_id = $1 AND owner = $2`,
    [commandId, owner, retryInMs, error.slice(0, 1000)],
  );
}

/** On a clean stop: every lease of this owner is freed so another instance takes over at once. */
export async function releaseAll(pool: Pool, owner: string): Promise<void> {
  await pool.query(`UPDATE ingest_cursors SET owner = NULL, lease_until = NULL WHERE owner = $1 AND result_state = 'result_pending'`, [owner]);
}
