import type { CoordinatorDeps } from './deps';

type Deps = Pick<CoordinatorDeps, 't' | 'nats' | 'pool' | 'clock' | 'logger' | 'settings'>;

/** One overdue task in the report. */
export interface OverdueTask {
  readonly taskId: string;
  readonly conversationId: string;
  readonly tenant: string;
  readonly userId: string;
  readonly status: string;
  readonly attempt: number;
  readonly runnerId: string | null;
  readonly deadlineAt: string;
  readonly overdueMs: number;
}

/** The periodic overdue report (issue 10.3): published on `report.tasks.overdue` and logged. */
export interface OverdueReport {
  readonly at: string;
  readonly graceMs: number;
  readonly count: number;
  /** At most REPORT_LIMIT tasks, most overdue first; `count` is the full number. */
  readonly tasks: readonly OverdueTask[];
}

const REPORT_LIMIT = 200;

/**
 * Unfinished tasks whose deadline (from the start; from the registration for one that never
 * started) passed more than the grace ago: the deadline sweep should have ended them by now, so
 * something is wrong (an unreachable runner, a stop whose exit was never proven).
 */
export async function overdueReport(d: Pick<Deps, 'pool' | 'clock' | 'settings'>): Promise<OverdueReport> {
  const now = d.clock.now();
  const graceMs = d.settings.overdueGraceMs;
  const due = `COALESCE(deadline_at, created_at + timeout_ms * interval '1 millisecond')`;
  const where = `status IN ('starting', 'running', 'stopping') AND ${due} + $2::bigint * interval '1 millisecond' < $1::timestamptz`;
  const [count, rows] = await Promise.all([
    d.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks WHERE ${where}`, [now, graceMs]),
    d.pool.query<{ task_id: string; conversation_id: string; tenant: string; user_id: string; status: string; attempt: number; runner_id: string | null; due: Date }>(
      `SELECT task_id, conversation_id, tenant, user_id, status, attempt, runner_id, ${due} AS due FROM tasks WHERE ${where} ORDER BY due LIMIT ${REPORT_LIMIT}`,
      [now, graceMs],
    ),
  ]);
  return {
    at: now.toISOString(),
    graceMs,
    count: count.rows[0]?.n ?? 0,
    tasks: rows.rows.map((r) => ({
      taskId: r.task_id,
      conversationId: r.conversation_id,
      tenant: r.tenant,
      userId: r.user_id,
      status: r.status,
      attempt: r.attempt,
      runnerId: r.runner_id,
      deadlineAt: r.due.toISOString(),
      overdueMs: now.getTime() - r.due.getTime(),
    })),
  };
}

/** The sweep: computes the report, logs it when something is overdue, and publishes it (also when nothing is, so a watcher sees the count go to 0). */
export async function publishOverdueReport(d: Deps): Promise<OverdueReport> {
  const report = await overdueReport(d);
  if (report.count > 0) d.logger.warn({ count: report.count, tasks: report.tasks.slice(0, 20).map((t) => `${t.taskId}:${t.status}:${t.overdueMs}ms`) }, 'unfinished tasks past their deadline');
  d.nats.nc.publish(d.t.reports.overdue, JSON.stringify(report));
  return report;
}
