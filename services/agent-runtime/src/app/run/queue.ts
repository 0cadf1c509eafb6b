import type { Pool, PoolClient } from 'pg';
import type { InternalTaskEvent, UserMessagePosted } from '@handplane/domain';

/**
 * The conversation's durable queue of work: user messages (`inbox`) and task completions
 * (`wakeups`). Unique keys make each message and each completion count once, beyond the
 * JetStream duplicate window; a row is consumed by the run it starts (or that read its result).
 */

/** Queues a user message; a redelivery is a no-op. */
export async function queueMessage(pool: Pool, conversationId: string, seq: number, message: UserMessagePosted['data']): Promise<void> {
  await pool.query(
    `INSERT INTO inbox (conversation_id, seq, kind, user_id, payload) VALUES ($1, $2, 'message', $3, $4)
     ON CONFLICT DO NOTHING`,
    [conversationId, seq, message.userId, JSON.stringify(message)],
  );
}

/** Queues a task completion; the (conversation, task, attempt) key wakes the agent once (G10). */
export async function queueWakeup(pool: Pool, conversationId: string, event: InternalTaskEvent['data']): Promise<void> {
  await pool.query(
    `INSERT INTO wakeups (conversation_id, task_id, attempt, user_id, payload) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING`,
    [conversationId, event.taskId, event.attempt, event.userId, JSON.stringify(event)],
  );
}

/**
 * Records that `runId` has read a finished task's result, so its completion (arrived or still to
 * come) starts no extra run.
 */
export async function markResultRead(pool: Pool, r: { conversationId: string; taskId: string; attempt: number; userId: string; runId: string }): Promise<void> {
  await pool.query(
    `INSERT INTO wakeups (conversation_id, task_id, attempt, user_id, payload, consumed_by_run, consumed_at)
     VALUES ($1, $2, $3, $4, $5, $6, now())
     ON CONFLICT (conversation_id, task_id, attempt) DO UPDATE SET consumed_by_run = EXCLUDED.consumed_by_run, consumed_at = now()
     WHERE wakeups.consumed_by_run IS NULL`,
    [r.conversationId, r.taskId, r.attempt, r.userId, JSON.stringify({ readBy: r.runId }), r.runId],
  );
}

/** The next piece of work: messages first, then completions in arrival order. */
export type WorkItem =
  | { readonly kind: 'message'; readonly seq: number; readonly userId: string; readonly message: UserMessagePosted['data'] }
  | { readonly kind: 'wakeup'; readonly taskId: string; readonly attempt: number; readonly userId: string; readonly event: InternalTaskEvent['data'] };

/** Locks and returns the next unconsumed item (inside the caller's transaction), or undefined. */
export async function lockNextItem(c: PoolClient, conversationId: string): Promise<WorkItem | undefined> {
  const m = await c.query<{ seq: string; user_id: string; payload: UserMessagePosted['data'] }>(
    `SELECT seq, user_id, payload FROM inbox WHERE conversation_id = $1 AND consumed_by_run IS NULL ORDER BY seq LIMIT 1 FOR UPDATE`,
    [conversationId],
  );
  if (m.rowCount) return { kind: 'message', seq: Number(m.rows[0]!.seq), userId: m.rows[0]!.user_id, message: m.rows[0]!.payload };
  const w = await c.query<{ task_id: string; attempt: number; user_id: string; payload: InternalTaskEvent['data'] }>(
    `SELECT task_id, attempt, user_id, payload FROM wakeups WHERE conversation_id = $1 AND consumed_by_run IS NULL
      ORDER BY received_at, task_id, attempt LIMIT 1 FOR UPDATE`,
    [conversationId],
  );
  if (!w.rowCount) return undefined;
  const r = w.rows[0]!;
  return { kind: 'wakeup', taskId: r.task_id, attempt: r.attempt, userId: r.user_id, event: r.payload };
}

/** Marks an item consumed by the run it starts (same transaction as the run's first checkpoint). */
export async function consumeItem(c: PoolClient, conversationId: string, item: WorkItem, runId: string): Promise<void> {
  if (item.kind === 'message') {
    await c.query(`UPDATE inbox SET consumed_by_run = $3 WHERE conversation_id = $1 AND seq = $2`, [conversationId, item.seq, runId]);
  } else {
    await c.query(`UPDATE wakeups SET consumed_by_run = $4, consumed_at = now() WHERE conversation_id = $1 AND task_id = $2 AND attempt = $3`, [
      conversationId,
      item.taskId,
      item.attempt,
      runId,
    ]);
  }
}

/** True when the conversation has unconsumed work. */
export async function hasWork(pool: Pool, conversationId: string): Promise<boolean> {
  const r = await pool.query(
    `SELECT 1 FROM inbox WHERE conversation_id = $1 AND consumed_by_run IS NULL
     UNION ALL SELECT 1 FROM wakeups WHERE conversation_id = $1 AND consumed_by_run IS NULL LIMIT 1`,
    [conversationId],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Conversations with queued work or an unfinished run (for the sweep that recovers lost kicks and runs). */
export async function conversationsNeedingWork(pool: Pool, limit = 200): Promise<string[]> {
  const r = await pool.query<{ conversation_id: string }>(
    `SELECT conversation_id FROM inbox WHERE consumed_by_run IS NULL
     UNION SELECT conversation_id FROM wakeups WHERE consumed_by_run IS NULL
     UNION SELECT conversation_id FROM run_checkpoints WHERE jsonb_typeof(state->'active') = 'object'
     LIMIT $1`,
    [limit],
  );
  return r.rows.map((x) => x.conversation_id);
}

/** Tenant and execution epoch of a conversation, from the `conversations` read model. */
export async function conversationInfo(pool: Pool, conversationId: string): Promise<{ tenant: string; epoch: number } | undefined> {
  const r = await pool.query<{ tenant: string; epoch: number }>(`SELECT tenant, epoch FROM conversations WHERE id = $1`, [conversationId]);
  return r.rowCount ? r.rows[0] : undefined;
}
