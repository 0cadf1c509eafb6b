import type { TaskView } from '@handplane/contracts';
import type { TaskReceipt } from '@handplane/domain';
import type { Pool } from 'pg';
import { NotFound } from '@handplane/kernel';
import { query } from './db';
import { isValidId } from './ids';
import type { Principal } from './resources';

/** A row of the `tasks` read model (owned by the coordinator). */
export interface TaskRow {
  task_id: string;
  command_id: string;
  conversation_id: string;
  tenant: string;
  user_id: string;
  origin: string;
  command: string;
  status: string;
  background: boolean;
  attempt: number;
  epoch: number;
  exit_code: number | null;
  signal: string | null;
  result_state: string;
  output_bytes: string;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  deadline_at: Date | null;
  receipt: TaskReceipt | null;
  /** From `task_prompts` (joined): the last prompt of the task and whether input came after it. */
  prompt?: string | null;
  prompt_offset?: string | null;
  prompt_attempt?: number | null;
  prompt_at?: Date | null;
  prompt_answered?: boolean | null;
}

/**
 * The columns of a task row with its prompt: `FROM tasks t` + this join. A prompt counts while
 * the attempt that printed it runs and no input came after it.
 */
const WITH_PROMPT = `t.*, p.prompt, p."offset" AS prompt_offset, p.attempt AS prompt_attempt, p.asked_at AS prompt_at, (p.answered_seq IS NOT NULL) AS prompt_answered`;
const JOIN_PROMPT = `LEFT JOIN task_prompts p ON p.task_id = t.task_id`;
const AWAITING = `(t.status = 'running' AND p.attempt = t.attempt AND p.answered_seq IS NULL)`;

/** The public task shape lives in libs/contracts (a contract shared with clients). */
export type { TaskView };

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toTaskView(t: TaskRow): TaskView {
  return {
    taskId: t.task_id,
    commandId: t.command_id,
    conversationId: t.conversation_id,
    userId: t.user_id,
    command: t.command,
    status: t.status,
    background: t.background,
    attempt: t.attempt,
    epoch: t.epoch,
    exitCode: t.exit_code,
    signal: t.signal,
    resultState: t.result_state,
    outputBytes: Number(t.output_bytes),
    createdAt: t.created_at.toISOString(),
    startedAt: iso(t.started_at),
    finishedAt: iso(t.finished_at),
    deadlineAt: iso(t.deadline_at),
    receipt: t.receipt ?? null,
    awaitingInput:
      t.prompt != null && !t.prompt_answered && t.status === 'running' && t.prompt_attempt === t.attempt
        ? { prompt: t.prompt, offset: Number(t.prompt_offset), attempt: t.attempt, since: iso(t.prompt_at ?? null)! }
        : null,
  };
}

/** The task if the caller may see it (same tenant, member of its conversation); NotFound otherwise. */
export async function requireTask(pool: Pool, p: Principal, taskId: string): Promise<TaskRow> {
  if (!isValidId(taskId)) throw new NotFound('task not found');
  const rows = await query<TaskRow>(
    pool,
    `SELECT ${WITH_PROMPT} FROM tasks t
       JOIN conversation_members m ON m.conversation_id = t.conversation_id AND m.user_id = $3 AND m.tenant = t.tenant
       ${JOIN_PROMPT}
      WHERE t.task_id = $1 AND t.tenant = $2`,
    [taskId, p.tenant, p.userId],
  );
  if (!rows[0]) throw new NotFound('task not found');
  return rows[0];
}

/** Every task of a conversation (the caller's membership is checked by the caller of this). */
export async function tasksOf(pool: Pool, tenant: string, conversationId: string): Promise<TaskRow[]> {
  return query<TaskRow>(pool, `SELECT ${WITH_PROMPT} FROM tasks t ${JOIN_PROMPT} WHERE t.conversation_id = $1 AND t.tenant = $2 ORDER BY t.created_at, t.task_id`, [conversationId, tenant]);
}

/** Filters of the task registry (`GET /v1/tasks`), already parsed. */
export interface TaskFilter {
  readonly statuses?: readonly string[];
  readonly conversationId?: string;
  /** Tasks started by this user (`?user=`). */
  readonly userId?: string;
  /** Only unfinished tasks whose deadline passed more than the grace before `overdue.now` (`?overdue=true`). */
  readonly overdue?: { readonly now: Date; readonly graceMs: number };
  /** `?awaiting=true`: only running tasks stopped at a prompt with no input after it (`false`: the others). */
  readonly awaiting?: boolean;
  readonly limit: number;
}

/**
 * An unfinished task past its deadline plus the grace: the deadline sweep should have ended it by
 * then (an unreachable runner, a stop never proven). A task that never started counts from its
 * registration.
 */
const OVERDUE = (now: string, grace: string) =>
  `t.status IN ('starting', 'running', 'stopping')
   AND COALESCE(t.deadline_at, t.created_at + t.timeout_ms * interval '1 millisecond') + ${grace}::bigint * interval '1 millisecond' < ${now}::timestamptz`;

/** Every task the caller may see (member conversations of their tenant), newest first. */
export async function visibleTasks(pool: Pool, p: Principal, f: TaskFilter): Promise<TaskRow[]> {
  const params: unknown[] = [p.tenant, p.userId, f.limit];
  const where: string[] = [];
  if (f.statuses) where.push(`t.status = ANY($${params.push(f.statuses)}::text[])`);
  if (f.conversationId) where.push(`t.conversation_id = $${params.push(f.conversationId)}`);
  if (f.userId) where.push(`t.user_id = $${params.push(f.userId)}`);
  if (f.overdue) where.push(OVERDUE(`$${params.push(f.overdue.now)}`, `$${params.push(f.overdue.graceMs)}`));
  if (f.awaiting !== undefined) where.push(f.awaiting ? AWAITING : `NOT COALESCE(${AWAITING}, false)`);
  return query<TaskRow>(
    pool,
    `SELECT ${WITH_PROMPT} FROM tasks t
       JOIN conversation_members m ON m.conversation_id = t.conversation_id AND m.user_id = $2 AND m.tenant = t.tenant
       ${JOIN_PROMPT}
      WHERE t.tenant = $1 ${where.map((w) => `AND ${w}`).join(' ')}
      ORDER BY t.created_at DESC, t.task_id
      LIMIT $3`,
    params,
  );
}
