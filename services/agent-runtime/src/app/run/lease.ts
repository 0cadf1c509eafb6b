import type { Pool, PoolClient } from 'pg';
import { Conflict } from '@handplane/kernel';

/** Raised when this instance no longer holds the conversation's run lease. */
export class LeaseLost extends Conflict {}

/**
 * Takes the conversation's run lease: inserts it, or takes it over only when it has expired (or is
 * already ours). False when another instance holds it: that instance looks for more work after
 * its run, so nothing is lost.
 */
export async function takeLease(pool: Pool, conversationId: string, owner: string, leaseMs: number): Promise<boolean> {
  const r = await pool.query(
    `INSERT INTO run_leases (conversation_id, run_id, owner, lease_until) VALUES ($1, '', $2, now() + $3::int * interval '1 millisecond')
     ON CONFLICT (conversation_id) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until
     WHERE run_leases.lease_until < now() OR run_leases.owner = EXCLUDED.owner
     RETURNING conversation_id`,
    [conversationId, owner, leaseMs],
  );
  return (r.rowCount ?? 0) > 0;
}

/**
 * Renews the lease (and records the run holding it). Inside a transaction that writes a
 * checkpoint, this fences the write: an instance that lost the lease writes nothing.
 */
export async function renewLease(db: Pool | PoolClient, conversationId: string, owner: string, leaseMs: number, runId?: string): Promise<void> {
  const r = await db.query(
    `UPDATE run_leases SET lease_until = now() + $3::int * interval '1 millisecond', run_id = COALESCE($4, run_id)
      WHERE conversation_id = $1 AND owner = $2`,
    [conversationId, owner, leaseMs, runId ?? null],
  );
  if (!r.rowCount) throw new LeaseLost(`the run lease of ${conversationId} is held by another instance`);
}

/** Gives the lease up (only if still ours). */
export async function releaseLease(pool: Pool, conversationId: string, owner: string): Promise<void> {
  await pool.query(`DELETE FROM run_leases WHERE conversation_id = $1 AND owner = $2`, [conversationId, owner]);
}
