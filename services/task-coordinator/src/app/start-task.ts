import type { StartTaskRequest } from '@handplane/contracts';
import { Conflict, IllegalState, ValidationError } from '@handplane/kernel';
import { checkStartBudget } from './budgets';
import type { CoordinatorDeps } from './deps';
import { knownEpoch } from './epochs';
import { commandIdFor, taskIdFor } from './ids';

/** The first attempt of every task (retries count up from it). */
export const FIRST_ATTEMPT = 1;

type Deps = Pick<CoordinatorDeps, 'tasks' | 'clock' | 'settings' | 'pool'>;
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
 */
export async function startTask(d: Deps, req: StartTaskRequest): Promise<Reply> {
  const timeoutMs = deadlineFor(req.input.timeoutMs, d.settings);
  const taskId = taskIdFor(req.tenant, req.requestId);
  const known = await knownEpoch(d.pool, req.conversationId);
  if (known && req.epoch < known.epoch) {
    const before = await existing(d, taskId);
    if (before) return before;
    throw new Conflict(`epoch ${req.epoch} of this conversation has ended (stop-all); it is at epoch ${known.epoch}`);
  }
  // A retried request answers its task whatever the budgets say now (the decider still refuses a
  // different task under the same request id); only a new task is counted.
  if (!(await d.tasks.load(taskId)).registered) await checkStartBudget(d, req.tenant, req.conversationId);
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
