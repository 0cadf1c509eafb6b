import { isDomainError } from '@handplane/kernel';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import { inTaskTrace } from './task-trace';

type Deps = Pick<CoordinatorDeps, 'pool' | 'tasks' | 'clock' | 'logger'>;

/**
 * The foreground cutover (G1): every running foreground task whose window has passed gets
 * TaskBackgrounded. The timers live in the `tasks` projection, not in memory, so they survive a
 * restart; two coordinators sweeping at once are harmless (the decider answers the second with
 * nothing). Returns how many tasks were moved to the background.
 */
export async function backgroundDueTasks(d: Deps, limit = 100): Promise<number> {
  const now = d.clock.now();
  const due = await d.pool.query<{ task_id: string; attempt: number; traceparent: string | null }>(
    `SELECT task_id, attempt, traceparent FROM tasks WHERE status = 'running' AND NOT background AND foreground_until <= $1 ORDER BY foreground_until LIMIT $2`,
    [now, limit],
  );
  let moved = 0;
  for (const { task_id: taskId, attempt, traceparent } of due.rows) {
    try {
      const r = await inTaskTrace('foreground cutover', taskId, traceparent, () =>
        d.tasks.execute(taskId, { type: 'BackgroundTask', data: {}, metadata: { at: now.toISOString(), actor: SYSTEM_ACTOR } }, `backgrounded:${taskId}:${attempt}`),
      );
      moved += r.events.length > 0 ? 1 : 0;
    } catch (e) {
      // The projection lags the log: the task may have finished since. Only real trouble is worth a line.
      if (isDomainError(e) && !e.retryable) continue;
      d.logger.warn({ err: e, taskId }, 'could not background task');
    }
  }
  return moved;
}
