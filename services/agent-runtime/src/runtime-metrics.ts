import { ServiceMetrics } from '@handplane/platform';
import type { Pool } from 'pg';

const count = async (pool: Pool, sql: string): Promise<number> => Number((await pool.query<{ n: string }>(sql)).rows[0]?.n ?? 0);

/**
 * The runtime's `/metrics`: its queues (user messages and task wake-ups not yet taken by a run, and
 * the age of the oldest wake-up) and the runs holding a live lease. Counts over every tenant.
 */
export function runtimeMetrics(pool: Pool): ServiceMetrics {
  const m = new ServiceMetrics('agent-runtime');
  m.gauge('handplane_runtime_inbox_pending', 'Inbox items (messages, answers, approvals) not yet taken by a run', [], () => count(pool, `SELECT count(*) AS n FROM inbox WHERE consumed_by_run IS NULL`));
  m.gauge('handplane_runtime_wakeups_pending', 'Task completions waiting to wake their conversation', [], () => count(pool, `SELECT count(*) AS n FROM wakeups WHERE consumed_at IS NULL`));
  m.gauge('handplane_runtime_oldest_wakeup_age_seconds', 'Age of the oldest pending wake-up (0 when none)', [], async () => {
    const { rows } = await pool.query<{ age: string | null }>(`SELECT EXTRACT(EPOCH FROM now() - min(received_at)) AS age FROM wakeups WHERE consumed_at IS NULL`);
    return Math.max(0, Number(rows[0]?.age ?? 0));
  });
  m.gauge('handplane_runtime_runs_active', 'Conversations with a run holding a live lease', [], () => count(pool, `SELECT count(*) AS n FROM run_leases WHERE lease_until > now()`));
  return m;
}
