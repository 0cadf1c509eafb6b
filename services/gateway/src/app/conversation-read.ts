import type { Pool } from 'pg';
import { NotFound } from '@handplane/kernel';
import type { Todo } from '@handplane/domain';
import { query } from './db';
import { isValidId } from './ids';
import type { Principal } from './resources';

/** A row of the `conversations` read model. */
export interface ConversationRow {
  id: string;
  tenant: string;
  title: string;
  created_by: string;
  created_at: Date;
  epoch: number;
  run_status: 'idle' | 'running' | 'waiting';
  run_id: string | null;
  run_user_id: string | null;
  todos: Todo[];
  wait_for_tasks: string[];
}

/** One item waiting for the agent: a user message or a finished task's wake-up. */
export interface QueueItem {
  kind: string;
  taskId?: string;
  userId: string;
}

/** The public view of a conversation (DESIGN.md §7). */
export interface ConversationView {
  id: string;
  title: string;
  members: { userId: string; addedAt: string }[];
  run: { status: string; runId?: string; userId?: string };
  todos: Todo[];
  waitForTasks: string[];
  epoch: number;
  queue: QueueItem[];
  /** Pending approvals and questions, oldest first (answered through the API). */
  approvals: { approvalId: string; runId: string | null; command: string; reason: string; requestedAt: string }[];
  questions: { questionId: string; runId: string | null; text: string; askedAt: string }[];
}

/**
 * The conversation if the caller may see it: same tenant and a member. Anything else is
 * NotFound, so nobody learns whether another tenant's conversation exists.
 */
export async function requireConversation(pool: Pool, p: Principal, id: string): Promise<ConversationRow> {
  if (!isValidId(id)) throw new NotFound('conversation not found');
  const rows = await query<ConversationRow>(
    pool,
    `SELECT c.* FROM conversations c
       JOIN conversation_members m ON m.conversation_id = c.id AND m.user_id = $3 AND m.tenant = c.tenant
      WHERE c.id = $1 AND c.tenant = $2`,
    [id, p.tenant, p.userId],
  );
  if (!rows[0]) throw new NotFound('conversation not found');
  return rows[0];
}

/** True when `userId` is already a member. */
export async function isMember(pool: Pool, conversationId: string, userId: string): Promise<boolean> {
  return (await query(pool, 'SELECT 1 FROM conversation_members WHERE conversation_id = $1 AND user_id = $2', [conversationId, userId])).length > 0;
}

/** A conversation created by this caller, whether or not its membership is projected yet. */
export async function findOwnConversation(pool: Pool, p: Principal, id: string): Promise<boolean> {
  return (await query(pool, 'SELECT 1 FROM conversations WHERE id = $1 AND tenant = $2 AND created_by = $3', [id, p.tenant, p.userId])).length > 0;
}

async function members(pool: Pool, id: string): Promise<ConversationView['members']> {
  const rows = await query<{ user_id: string; added_at: Date }>(pool, 'SELECT user_id, added_at FROM conversation_members WHERE conversation_id = $1 ORDER BY added_at, user_id', [id]);
  return rows.map((r) => ({ userId: r.user_id, addedAt: r.added_at.toISOString() }));
}

/** What the agent has not consumed yet: messages first (the runtime runs them first), then wake-ups. */
async function pending(pool: Pool, id: string): Promise<QueueItem[]> {
  const messages = await query<{ kind: string; user_id: string }>(pool, 'SELECT kind, user_id FROM inbox WHERE conversation_id = $1 AND consumed_by_run IS NULL ORDER BY seq', [id]);
  const wakeups = await query<{ task_id: string; user_id: string }>(
    pool,
    'SELECT task_id, user_id FROM wakeups WHERE conversation_id = $1 AND consumed_at IS NULL ORDER BY received_at, task_id, attempt',
    [id],
  );
  return [...messages.map((m) => ({ kind: m.kind, userId: m.user_id })), ...wakeups.map((w) => ({ kind: 'task_event', taskId: w.task_id, userId: w.user_id }))];
}

interface PromptRow {
  kind: 'approval' | 'question';
  prompt_id: string;
  run_id: string | null;
  request: { command?: string; reason?: string; text?: string };
  requested_at: Date;
}

async function pendingPrompts(pool: Pool, id: string): Promise<Pick<ConversationView, 'approvals' | 'questions'>> {
  const rows = await query<PromptRow>(
    pool,
    `SELECT kind, prompt_id, run_id, request, requested_at FROM conversation_prompts WHERE conversation_id = $1 AND status = 'pending' ORDER BY requested_seq`,
    [id],
  );
  return {
    approvals: rows
      .filter((r) => r.kind === 'approval')
      .map((r) => ({ approvalId: r.prompt_id, runId: r.run_id, command: r.request.command ?? '', reason: r.request.reason ?? '', requestedAt: r.requested_at.toISOString() })),
    questions: rows.filter((r) => r.kind === 'question').map((r) => ({ questionId: r.prompt_id, runId: r.run_id, text: r.request.text ?? '', askedAt: r.requested_at.toISOString() })),
  };
}

/** The full view of a conversation the caller may see. */
export async function conversationView(pool: Pool, p: Principal, id: string): Promise<ConversationView> {
  const c = await requireConversation(pool, p, id);
  const [m, q, prompts] = await Promise.all([members(pool, id), pending(pool, id), pendingPrompts(pool, id)]);
  return {
    id: c.id,
    title: c.title,
    members: m,
    run: { status: c.run_status, ...(c.run_id ? { runId: c.run_id } : {}), ...(c.run_user_id ? { userId: c.run_user_id } : {}) },
    todos: c.todos,
    waitForTasks: c.wait_for_tasks,
    epoch: c.epoch,
    queue: q,
    ...prompts,
  };
}
