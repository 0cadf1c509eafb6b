import type { StartTaskRequest } from '@handplane/contracts';
import { Conflict, IllegalState, Unavailable, ValidationError } from '@handplane/kernel';
import { waitForProjection } from '@handplane/platform';
import { budgetsSet, checkStartBudget } from './budgets';
import type { CoordinatorDeps } from './deps';
import { knownEpoch } from './epochs';
import { commandIdFor, taskIdFor } from './ids';
import { underLock } from './task-lock';
import { TASKS_PROJECTION } from './tasks.projection';

/** The first attempt of every task (retries count up from it). */
export const FIRST_ATTEMPT = 1;

type Deps = Pick<CoordinatorDeps, 'tasks' | 'clock' | 'settings' | 'pool' | 'lockPool' | 'conversations'>;
type Reply = { ok: true; taskId: string; commandId: string; seq: number };

/** The deadline a task runs under: its own, or the default; never above the maximum. */
export function deadlineFor(timeoutMs: number | undefined, s: { defaultDeadlineMs: number; maxDeadlineMs: number }): number {
  const ms = timeoutMs ?? s.defaultDeadlineMs;
  if (ms > s.maxDeadlineMs) throw new ValidationError(`timeoutMs must be at most ${s.maxDeadlineMs}`, [`input.timeoutMs: at most ${s.maxDeadlineMs}`]);
  return ms;
}

async function existing(d: Deps, taskId: string): Promise<Reply | null> {
  const { registered } = await d.tasks.load(taskId);
  return registered ? { ok: true, taskId, commandId: registered.event.data.commandId, seq: registered.seq } : null;
}

/**
 * `start-task`: registers the task (expected subject sequence 0). A retried request derives the
 * same ids, finds the task registered and answers the same ids and sequence without a second event.
 * `seq` is the TASKS sequence of TaskRegistered: the gateway waits for the `tasks` projection to reach it.
 * A request naming an epoch that stop-all has ended is refused (conflict): nothing new starts under
 * it. (A request racing the stop-all may still register; dispatch and the epoch sweep stop it.)
 * The conversation must exist and belong to the request's tenant (read from CONV, not trusted from
 * the caller): a task never starts in a conversation of another tenant.
 */
export async function startTask(d: Deps, req: StartTaskRequest): Promise<Reply> {
  const timeoutMs = deadlineFor(req.input.timeoutMs, d.settings);
  await d.conversations.check(req.conversationId, req.tenant);
  const taskId = taskIdFor(req.tenant, req.requestId);
  const known = await knownEpoch(d.pool, req.conversationId);
  if (known && req.epoch < known.epoch) {
    const before = await existing(d, taskId);
    if (before) return before;
    throw new Conflict(`epoch ${req.epoch} of this conversation has ended (stop-all); it is at epoch ${known.epoch}`);
  }
  if (!budgetsSet(d.settings.budgets)) return register(d, req, taskId, timeoutMs);
  // With budgets, a tenant's starts go one at a time (across coordinators: an advisory lock), and
  // each waits until the read model shows its registration, so the next check counts it.
  const registerChecked = async () => {
    // A retried request answers its task whatever the budgets say now (the decider still refuses a
    // different task under the same request id); only a new task is counted.
    if (!(await d.tasks.load(taskId)).registered) await checkStartBudget(d, req.tenant, req.conversationId);
    const r = await register(d, req, taskId, timeoutMs);
    if (!(await waitForProjection(d.pool, TASKS_PROJECTION, r.seq, BUDGET_PROJECTION_WAIT_MS))) {
      throw new Unavailable(`task ${taskId} is registered but the tasks read model does not show it yet; budgets cannot be checked for the next start`);
    }
    return r;
  };
  return underLock(d.lockPool ?? d.pool, `budget:${req.tenant}`, registerChecked, BUDGET_LOCK);
}

/** How long a start under budgets waits for the read model to show it. */
const BUDGET_PROJECTION_WAIT_MS = 10_000;
/**
 * A tenant's starts under budgets: at most 64 queued per coordinator, and a start whose turn comes
 * after 8 s is refused unregistered (callers' RPC timeouts are 10–15 s: it must not register after
 * its caller gave up and may have retried under another request id).
 */
const BUDGET_LOCK = { maxWaiting: 64, maxWaitMs: 8_000 };

async function register(d: Deps, req: StartTaskRequest, taskId: string, timeoutMs: number): Promise<Reply> {
  const commandId = commandIdFor(taskId, FIRST_ATTEMPT);
  const r = await d.tasks.execute(
    taskId,
    {
      type: 'RegisterTask',
      data: {
        taskId,
        commandId,
        conversationId: req.conversationId,
        tenant: req.tenant,
        userId: req.userId,
        origin: req.origin,
        ...(req.runId ? { runId: req.runId } : {}),
        command: req.input.command,
        cwd: req.input.cwd ?? '',
        env: req.input.env ?? {},
        epoch: req.epoch,
        attempt: FIRST_ATTEMPT,
        foregroundWindowMs: d.settings.foregroundWindowMs,
        timeoutMs,
      },
      metadata: { at: d.clock.now().toISOString(), actor: req.userId },
    },
    `register:${taskId}`,
  );
  if (r.events.length > 0) return { ok: true, taskId, commandId, seq: r.lastSeq };
  const before = await existing(d, taskId);
  if (!before) throw new IllegalState(`task ${taskId} vanished`);
  return before;
}
