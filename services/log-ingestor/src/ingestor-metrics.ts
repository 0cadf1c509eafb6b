import { ServiceMetrics } from '@handplane/platform';
import type { Pool } from 'pg';
import type { IngestStats } from './app/ingest-stats';

/**
 * The ingestor's `/metrics`: ingestion lag (commands whose result is still pending, the age of the
 * oldest, bytes committed), cursors by result state, and what this instance is reading.
 */
export function ingestorMetrics(pool: Pool, stats: IngestStats, active: () => number): ServiceMetrics {
  const m = new ServiceMetrics('log-ingestor');
  m.gauge('handplane_ingest_commands', 'Commands known to the ingestor, by result state (result_pending = output or exit not yet durable)', ['state'], async () => {
    const { rows } = await pool.query<{ state: string; n: string }>(`SELECT result_state AS state, count(*) AS n FROM ingest_cursors GROUP BY result_state`);
    const counts = new Map<string, number>([['result_pending', 0]]);
    for (const r of rows) counts.set(r.state, Number(r.n));
    return [...counts].map(([state, value]) => ({ labels: { state }, value }));
  });
  m.gauge('handplane_ingest_oldest_pending_age_seconds', 'Age of the oldest command whose result is still pending (0 when none)', [], async () => {
    const { rows } = await pool.query<{ age: string | null }>(`SELECT EXTRACT(EPOCH FROM now() - min(created_at)) AS age FROM ingest_cursors WHERE result_state = 'result_pending'`);
    return Math.max(0, Number(rows[0]?.age ?? 0));
  });
  m.gauge('handplane_ingest_commands_failing', 'Pending commands whose last read failed (waiting for a retry)', [], async () => {
    const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ingest_cursors WHERE result_state = 'result_pending' AND last_error IS NOT NULL`);
    return Number(rows[0]?.n ?? 0);
  });
  m.gauge('handplane_ingest_commands_active', 'Commands this instance is reading now', [], async () => active());
  m.counterFrom('handplane_ingest_committed_bytes_total', 'Output bytes made durable (Command Log + LOGS) by this instance', () => stats.bytesCommitted);
  m.counterFrom('handplane_ingest_committed_rows_total', 'Command Log rows committed by this instance', () => stats.rowsCommitted);
  return m;
}
