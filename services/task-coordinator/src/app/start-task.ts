import type { StartTaskRequest } from '@handplane/contracts';
import { IllegalState, ValidationError } from '@handplane/kernel';
import type { CoordinatorDeps } from './deps';
import { commandIdFor, taskIdFor } from './ids';

/** The first attempt of every task (retries are issue 4). */
export const FIRST_ATTEMPT = 1;

/** The deadline a task runs under: its own, or the default; never above the maximum. */
export function deadlineFor(timeoutMs: number | undefined, s: { defaultDeadlineMs: number; maxDeadlineMs: number }): number {
  const ms = timeoutMs ?? s.defaultDeadlineMs;
  if (ms > s.maxDeadlineMs) throw new ValidationError(`timeoutMs must be at most ${s.maxDeadlineMs}`, [`input.timeoutMs: at most ${s.maxDeadlineMs}`]);
  return ms;
}

/**
 * `start-task`: registers the task (expected subject sequence 0). A retried request derives the
 * same ids, finds the task registered and answers the same ids and sequence without a second event.
 * `seq` is the TASKS sequence of TaskRegistered: the gateway waits for the `tasks` projection to reach it.
 */
export async function startTask(
  d: Pick<CoordinatorDeps, 'tasks' | 'clock' | 'settings'>,
  req: StartTaskRequest,
): Promise<{ ok: true; taskId: string; commandId: string; seq: number }> {
  const timeoutMs = deadlineFor(req.input.timeoutMs, d.settings);
  const taskId = taskIdFor(req.tenant, req.requestId);
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
  const { registered } = await d.tasks.load(taskId);
  if (!registered) throw new IllegalState(`task ${taskId} vanished`);
  return { ok: true, taskId, commandId: registered.event.data.commandId, seq: registered.seq };
}
