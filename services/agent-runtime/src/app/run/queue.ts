import type { Pool, PoolClient } from 'pg';
import type { ApprovalResolved, InternalTaskEvent, QuestionAnswered, TaskConditionMet, UserMessagePosted } from '@handplane/domain';

/**
 * The conversation's durable queue of work: human input (`inbox`: messages, answers to questions,
 * approval decisions, in stream order) and task completions (`wakeups`). Unique keys make each
 * count once, beyond the JetStream duplicate window; a row is consumed by the run it starts (or
 * steers, or that read its result), in the transaction that writes that run's checkpoint.
 */

type InboxKind = 'message' | 'answer' | 'approval';

async function queueInbox(pool: Pool, conversationId: string, seq: number, kind: InboxKind, userId: string, payload: unknown): Promise<void> {
  await pool.query(`INSERT INTO inbox (conversation_id, seq, kind, user_id, payload) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, [
    conversationId,
    seq,
    kind,
    userId,
    JSON.stringify(payload),
  ]);
}

/** Queues a user message; a redelivery is a no-op. */
export function queueMessage(pool: Pool, conversationId: string, seq: number, message: UserMessagePosted['data']): Promise<void> {
  return queueInbox(pool, conversationId, seq, 'message', message.userId, message);
}

/** Queues a person's answer to a question. */
export function queueAnswer(pool: Pool, conversationId: string, seq: number, answer: QuestionAnswered['data']): Promise<void> {
  return queueInbox(pool, conversationId, seq, 'answer', answer.by, answer);
}

/** Queues a person's decision on an approval (automated ones are the runtime's own and are not queued). */
export function queueApproval(pool: Pool, conversationId: string, seq: number, decision: ApprovalResolved['data']): Promise<void> {
  return queueInbox(pool, conversationId, seq, 'approval', decision.by, decision);
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
 * A condition wait resolved (issue 10.1): one wake-up per condition, keyed by the condition id (never
 * a task id, so the task's own completion still wakes the agent once, on its own row).
 */
export async function queueConditionWakeup(pool: Pool, conversationId: string, event: TaskConditionMet['data']): Promise<void> {
  await pool.query(
    `INSERT INTO wakeups (conversation_id, task_id, attempt, user_id, payload) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT DO NOTHING`,
    [conversationId, event.conditionId, event.attempt, event.userId, JSON.stringify(event)],
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

/** The next piece of work: human input first (in arrival order), then completions in arrival order. */
export type WorkItem =
  | { readonly kind: 'message'; readonly seq: number; readonly userId: string; readonly message: UserMessagePosted['data'] }
  | { readonly kind: 'answer'; readonly seq: number; readonly userId: string; readonly answer: QuestionAnswered['data'] }
  | { readonly kind: 'approval'; readonly seq: number; readonly userId: string; readonly decision: ApprovalResolved['data'] }
  /** A completion, or (issue 10.1) a condition wait that resolved: then `taskId` is the row key (the condition id) and `event` the condition. */
  | { readonly kind: 'wakeup'; readonly taskId: string; readonly attempt: number; readonly userId: string; readonly event: InternalTaskEvent['data'] | TaskConditionMet['data'] };

type InboxRow = { seq: string; kind: InboxKind; user_id: string; payload: unknown };

function inboxItem(r: InboxRow): WorkItem {
  const seq = Number(r.seq);
  if (r.kind === 'answer') return { kind: 'answer', seq, userId: r.user_id, answer: r.payload as QuestionAnswered['data'] };
  if (r.kind === 'approval') return { kind: 'approval', seq, userId: r.user_id, decision: r.payload as ApprovalResolved['data'] };
  return { kind: 'message', seq, userId: r.user_id, message: r.payload as UserMessagePosted['data'] };
}

/**
 * Locks and returns the next unconsumed item (inside the caller's transaction), or undefined.
 * `wakeups: false` holds completions back while a question or approval waits for a person (G10).
 */
export async function lockNextItem(c: PoolClient, conversationId: string, opts: { wakeups: boolean } = { wakeups: true }): Promise<WorkItem | undefined> {
  const m = await c.query<InboxRow>(`SELECT seq, kind, user_id, payload FROM inbox WHERE conversation_id = $1 AND consumed_by_run IS NULL ORDER BY seq LIMIT 1 FOR UPDATE`, [conversationId]);
  if (m.rowCount) return inboxItem(m.rows[0]!);
  if (!opts.wakeups) return undefined;
  const w = await c.query<{ task_id: string; attempt: number; user_id: string; payload: InternalTaskEvent['data'] | TaskConditionMet['data'] }>(
    `SELECT task_id, attempt, user_id, payload FROM wakeups WHERE conversation_id = $1 AND consumed_by_run IS NULL
      ORDER BY received_at, task_id, attempt LIMIT 1 FOR UPDATE`,
    [conversationId],
  );
  if (!w.rowCount) return undefined;
  const r = w.rows[0]!;
  return { kind: 'wakeup', taskId: r.task_id, attempt: r.attempt, userId: r.user_id, event: r.payload };
}

/** Locks the user messages that arrived while run is active (they steer it), in order. */
export async function lockSteeringMessages(c: PoolClient, conversationId: string): Promise<Extract<WorkItem, { kind: 'message' }>[]> {
  const r = await c.query<InboxRow>(`SELECT seq, kind, user_id, payload FROM inbox WHERE conversation_id = $1 AND kind = 'message' AND consumed_by_run IS NULL ORDER BY seq FOR UPDATE`, [
    conversationId,
  ]);
  return r.rows.map((x) => inboxItem(x) as Extract<WorkItem, { kind: 'message' }>);
}

/** True when a user message waits (a cheap look before taking locks). */
export async function hasSteeringMessage(pool: Pool, conversationId: string): Promise<boolean> {
  const r = await pool.query(`SELECT 1 FROM inbox WHERE conversation_id = $1 AND kind = 'message' AND consumed_by_run IS NULL LIMIT 1`, [conversationId]);
  return (r.rowCount ?? 0) > 0;
}

/** Marks an item consumed by `runId` (same transaction as the run's checkpoint); `ignored:<why>` for stale input. */
export async function consumeItem(c: PoolClient, conversationId: string, item: WorkItem, runId: string): Promise<void> {
  if (item.kind !== 'wakeup') {
    await c.query(`UPDATE inbox SET consumed_by_run = $3 WHERE conversation_id = $1 AND seq = $2`, [conversationId, item.seq, runId]);
  } else {
    await c.query(`UPDATE wakeups SET consumed_by_run = $4, consumed_at = now() WHERE conversation_id = $1 AND task_id = $2 AND attempt = $3`, [conversationId, item.taskId, item.attempt, runId]);
  }
}

/** Completions may start runs unless the checkpoint shows a question or approval open (G10). */
const WAKEUPS_ADMITTED = `NOT EXISTS (SELECT 1 FROM run_checkpoints k WHERE k.conversation_id = w.conversation_id
  AND jsonb_array_length(COALESCE(k.state->'conv'->'open', '[]'::jsonb)) > 0)`;

/** True when the conversation has work a run could take now. */
export async function hasWork(pool: Pool, conversationId: string): Promise<boolean> {
  const r = await pool.query(
    `SELECT 1 FROM inbox WHERE conversation_id = $1 AND consumed_by_run IS NULL
     UNION ALL SELECT 1 FROM wakeups w WHERE w.conversation_id = $1 AND w.consumed_by_run IS NULL AND ${WAKEUPS_ADMITTED} LIMIT 1`,
    [conversationId],
  );
  return (r.rowCount ?? 0) > 0;
}

/** Conversations with work a run could take, or an unfinished run (for the sweep that recovers lost kicks and runs). */
export async function conversationsNeedingWork(pool: Pool, limit = 200): Promise<string[]> {
  const r = await pool.query<{ conversation_id: string }>(
    `SELECT conversation_id FROM inbox WHERE consumed_by_run IS NULL
     UNION SELECT w.conversation_id FROM wakeups w WHERE w.consumed_by_run IS NULL AND ${WAKEUPS_ADMITTED}
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
