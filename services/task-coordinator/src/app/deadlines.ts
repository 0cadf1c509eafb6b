import type { CoordinatorDeps } from './deps';

/** A task past its deadline (`deadline_at`, measured from its start). */
export interface OverdueTask {
  readonly taskId: string;
  readonly attempt: number;
  readonly deadlineAt: Date;
}

/**
 * The deadline seam (issue 4). Enforcing a deadline means RequestStop{reason: 'deadline'}, the
 * fenced Signal to the runner with escalation, and `timed_out` when the runner reports the exit.
 * None of that exists yet, so the coordinator runs no enforcer unless one is given; this query is
 * what the enforcer will be fed, derived from the projection like the foreground cutover.
 */
export type DeadlineEnforcer = (overdue: readonly OverdueTask[]) => Promise<void>;

/** Running tasks whose deadline has passed, oldest first. */
export async function overdueTasks(d: Pick<CoordinatorDeps, 'pool' | 'clock'>, limit = 100): Promise<OverdueTask[]> {
  const r = await d.pool.query<{ task_id: string; attempt: number; deadline_at: Date }>(
    `SELECT task_id, attempt, deadline_at FROM tasks WHERE status = 'running' AND deadline_at <= $1 ORDER BY deadline_at LIMIT $2`,
    [d.clock.now(), limit],
  );
  return r.rows.map((row) => ({ taskId: row.task_id, attempt: row.attempt, deadlineAt: row.deadline_at }));
}
