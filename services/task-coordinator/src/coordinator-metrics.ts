import { TERMINAL_TASK_STATUSES } from '@handplane/domain';
import { ServiceMetrics } from '@handplane/platform';
import type { Pool } from 'pg';

/** Every status a task can have, so a status with no task still shows 0. */
const STATUSES = ['starting', 'running', 'stopping', ...TERMINAL_TASK_STATUSES] as const;

/**
 * The coordinator's `/metrics` (it hosts the `tasks` projection): tasks by status, background tasks
 * still open, tasks stopping, and completion notices not yet published (the outbox). All counts are
 * over every tenant: no tenant, user or task label.
 */
export function coordinatorMetrics(pool: Pool): ServiceMetrics {
  const m = new ServiceMetrics('task-coordinator');
  m.gauge('handplane_tasks', 'Tasks in the tasks projection, by status', ['status'], async () => {
    const { rows } = await pool.query<{ status: string; n: string }>(`SELECT status, count(*) AS n FROM tasks GROUP BY status`);
    const counts = new Map<string, number>(STATUSES.map((s) => [s, 0]));
    for (const r of rows) counts.set(r.status, Number(r.n));
    return [...counts].map(([status, value]) => ({ labels: { status }, value }));
  });
  m.gauge('handplane_tasks_backgrounded', 'Background tasks not finished yet', [], async () => {
    const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM tasks WHERE background AND finished_at IS NULL`);
    return Number(rows[0]?.n ?? 0);
  });
  m.gauge('handplane_tasks_stopping', 'Tasks asked to stop whose exit is not proven yet', [], async () => {
    const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM tasks WHERE status = 'stopping'`);
    return Number(rows[0]?.n ?? 0);
  });
  m.gauge('handplane_completion_outbox_pending', 'Task completions recorded but not yet published to the conversation', [], async () => {
    const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM task_notifications WHERE published_at IS NULL`);
    return Number(rows[0]?.n ?? 0);
  });
  return m;
}
