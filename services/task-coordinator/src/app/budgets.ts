import { Forbidden, IllegalState, Conflict } from '@handplane/kernel';
import type { Pool } from 'pg';
import type { CoordinatorDeps } from './deps';
import { stopAndSignal } from './stop-task';
import { inTaskTrace } from './task-trace';

/** Who the budget sweep's stops are attributed to. */
export const BUDGET_ACTOR = 'system:budgets';

/** One scope's limits; 0 means no limit. */
export interface Budget {
  readonly maxConcurrent: number;
  readonly maxRuntimeMs: number;
  readonly maxOutputBytes: number;
}

/** Budgets per conversation and per tenant (BUDGET_CONV_* and BUDGET_TENANT_*). */
export interface Budgets {
  readonly conversation: Budget;
  readonly tenant: Budget;
}

/** What a scope has used: unfinished tasks, summed runtime (started → finished or now), output bytes. */
export interface Usage {
  readonly concurrent: number;
  readonly runtimeMs: number;
  readonly outputBytes: number;
}

export type ScopeKind = 'conversation' | 'tenant';

const SCOPE_WORDS: Record<ScopeKind, string> = { conversation: 'this conversation', tenant: 'this tenant' };

/** Why a new task is refused in this scope, or null (pure). */
export function startRefusal(kind: ScopeKind, u: Usage, b: Budget): string | null {
  const who = SCOPE_WORDS[kind];
  if (b.maxConcurrent > 0 && u.concurrent >= b.maxConcurrent)
    return `budget exceeded: ${who} already has ${u.concurrent} unfinished tasks, its limit is ${b.maxConcurrent} concurrent tasks; wait for one to finish or stop one`;
  if (b.maxRuntimeMs > 0 && u.runtimeMs >= b.maxRuntimeMs) return `budget exceeded: ${who} has used ${u.runtimeMs} ms of task runtime, its limit is ${b.maxRuntimeMs} ms`;
  if (b.maxOutputBytes > 0 && u.outputBytes >= b.maxOutputBytes) return `budget exceeded: ${who} has produced ${u.outputBytes} bytes of output, its limit is ${b.maxOutputBytes} bytes`;
  return null;
}

/** The budget a scope's running tasks have gone over (runtime or output), as the receipt's detail; null when within (pure). */
export function overBudget(kind: ScopeKind, u: Usage, b: Budget): string | null {
  if (b.maxRuntimeMs > 0 && u.runtimeMs > b.maxRuntimeMs) return `budget: ${kind} runtime ${b.maxRuntimeMs} ms`;
  if (b.maxOutputBytes > 0 && u.outputBytes > b.maxOutputBytes) return `budget: ${kind} output ${b.maxOutputBytes} bytes`;
  return null;
}

// Runtime counts from the start to the finish (or now); output is the larger of what the task
// recorded and what the ingestor has committed for its current command (live tasks).
const USAGE = (where: string, group: string) => `
  SELECT ${group} AS scope,
         COUNT(*) FILTER (WHERE t.status IN ('starting', 'running', 'stopping'))::int AS concurrent,
         COALESCE(SUM(CASE WHEN t.started_at IS NULL THEN 0
                      ELSE GREATEST(0, EXTRACT(EPOCH FROM (COALESCE(t.finished_at, $1::timestamptz) - t.started_at)) * 1000) END), 0)::float8 AS runtime_ms,
         COALESCE(SUM(GREATEST(t.output_bytes, COALESCE(ic.committed_offset, 0))), 0)::float8 AS output_bytes
    FROM tasks t LEFT JOIN ingest_cursors ic ON ic.command_id = t.command_id
   WHERE ${where}
   GROUP BY ${group}`;

interface UsageRow {
  scope: string;
  concurrent: number;
  runtime_ms: number;
  output_bytes: number;
}

const toUsage = (r: UsageRow | undefined): Usage => ({ concurrent: r?.concurrent ?? 0, runtimeMs: Math.floor(r?.runtime_ms ?? 0), outputBytes: r?.output_bytes ?? 0 });

/** The usage of one conversation and of its tenant, read from the `tasks` read model and the ingest cursors. */
export async function usageOf(pool: Pool, tenant: string, conversationId: string, now: Date): Promise<{ conversation: Usage; tenant: Usage }> {
  const [conv, ten] = await Promise.all([
    pool.query<UsageRow>(USAGE('t.tenant = $2 AND t.conversation_id = $3', 't.conversation_id'), [now, tenant, conversationId]),
    pool.query<UsageRow>(USAGE('t.tenant = $2', 't.tenant'), [now, tenant]),
  ]);
  return { conversation: toUsage(conv.rows[0]), tenant: toUsage(ten.rows[0]) };
}

const limited = (b: Budget) => b.maxConcurrent > 0 || b.maxRuntimeMs > 0 || b.maxOutputBytes > 0;

/** True when any budget is set: starts are then checked (and serialized per tenant, see `startTask`). */
export const budgetsSet = (budgets: Budgets): boolean => limited(budgets.conversation) || limited(budgets.tenant);

/**
 * Refuses a new task (Forbidden, HTTP 403, with the reason) when its conversation or tenant is at a
 * budget. Read from the read model: the caller serializes the starts of a tenant and waits for the
 * model to show each registration before the next check (`startTask`), so racing starts cannot
 * overshoot a concurrency limit.
 */
export async function checkStartBudget(d: Pick<CoordinatorDeps, 'pool' | 'clock' | 'settings'>, tenant: string, conversationId: string): Promise<void> {
  const budgets = d.settings.budgets;
  if (!budgetsSet(budgets)) return;
  const u = await usageOf(d.pool, tenant, conversationId, d.clock.now());
  const why = startRefusal('conversation', u.conversation, budgets.conversation) ?? startRefusal('tenant', u.tenant, budgets.tenant);
  if (why) throw new Forbidden(why);
}

type SweepDeps = Pick<CoordinatorDeps, 'pool' | 'tasks' | 'registry' | 'runners' | 'clock' | 'logger' | 'settings'>;

/** Scopes (conversations, tenants) with a running task that are over a runtime or output budget. */
async function overdrawn(d: SweepDeps, kind: ScopeKind): Promise<{ scope: string; detail: string }[]> {
  const b = d.settings.budgets[kind];
  if (b.maxRuntimeMs === 0 && b.maxOutputBytes === 0) return [];
  const col = kind === 'conversation' ? 't.conversation_id' : 't.tenant';
  const rows = await d.pool.query<UsageRow>(USAGE(`${col} IN (SELECT ${kind === 'conversation' ? 'conversation_id' : 'tenant'} FROM tasks WHERE status = 'running')`, col), [d.clock.now()]);
  const out: { scope: string; detail: string }[] = [];
  for (const r of rows.rows) {
    const detail = overBudget(kind, toUsage(r), b);
    if (detail) out.push({ scope: r.scope, detail });
  }
  return out;
}

/**
 * The budget sweep: every running task of a conversation or tenant over its runtime or output
 * budget is stopped with reason `policy`; its receipt reads "killed … by policy (budget: …)".
 * Stops are idempotent (a task already stopping stays as it is), so two coordinators sweeping
 * at once do no harm. Answers the ids asked to stop.
 */
export async function enforceBudgets(d: SweepDeps): Promise<string[]> {
  const stopped: string[] = [];
  for (const kind of ['conversation', 'tenant'] as const) {
    for (const { scope, detail } of await overdrawn(d, kind)) {
      const col = kind === 'conversation' ? 'conversation_id' : 'tenant';
      const running = await d.pool.query<{ task_id: string; attempt: number; traceparent: string | null }>(`SELECT task_id, attempt, traceparent FROM tasks WHERE ${col} = $1 AND status = 'running'`, [scope]);
      for (const t of running.rows) {
        try {
          await inTaskTrace('budget stop', t.task_id, t.traceparent, () => stopAndSignal(d, t.task_id, { reason: 'policy', requestedBy: BUDGET_ACTOR, attempt: t.attempt, detail }));
          stopped.push(t.task_id);
          d.logger.info({ taskId: t.task_id, detail }, 'over budget: stopping the task');
        } catch (e) {
          // The read model lags: the task finished or moved on since it was read.
          if (e instanceof IllegalState || e instanceof Conflict) continue;
          d.logger.warn({ err: e, taskId: t.task_id }, 'could not stop a task over budget; the next sweep retries');
        }
      }
    }
  }
  return stopped;
}
