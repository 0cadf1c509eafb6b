import type { Pool, PoolClient } from 'pg';

/**
 * SQL of the output cap: the committed cursor moves through the dropped range with nothing stored,
 * and `[dropped_from, dropped_to)` always says exactly which bytes were skipped on purpose.
 */

/**
 * Moves the cursor from `from` to `to` across dropped bytes (only while we own the lease and the
 * range is still open). `final` fixes the range: the tail from `to` on is then stored as usual.
 */
export async function advanceDropped(
  db: Pool | PoolClient,
  a: { commandId: string; owner: string; from: number; to: number; droppedFrom: number; final: boolean; leaseMs: number },
): Promise<boolean> {
  const r = await db.query(
    `UPDATE ingest_cursors SET committed_offset = $4, dropped_from = COALESCE(dropped_from, $5), dropped_to = $4, drop_final = $6,
       lease_until = now() + make_interval(secs => $7::double precision / 1000), last_error = NULL, updated_at = now()
     WHERE command_id = $1 AND owner = $2 AND committed_offset = $3 AND result_state = 'result_pending' AND NOT drop_final`,
    [a.commandId, a.owner, a.from, a.to, a.droppedFrom, a.final, a.leaseMs],
  );
  return r.rowCount === 1;
}
