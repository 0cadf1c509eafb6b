// Projection rebuild rate: the TASKS stream this run wrote, rebuilt into the coordinator's `tasks`
// read model of a fresh database, against raw batched Postgres inserts of as many rows.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { createLogger, createPool, inTransaction, projectionRebuildRate, rebuildProjection, type Nats } from '@handplane/platform';
import type { Topology } from '@handplane/contracts';
import { freshDatabase } from '@handplane/testing';
import { tasksProjection } from '../services/task-coordinator/src/app/tasks.projection';
import { value, type Row } from './table';

/** Raw Postgres: `rows` small rows (about the size of one task event) in multi-row INSERTs of `batch` per commit; rows/s. */
export async function rawRowInserts(pool: Pool, rows: number, batch = 200): Promise<number> {
  await pool.query('CREATE TABLE IF NOT EXISTS bench_rows (seq bigint PRIMARY KEY, subject text NOT NULL, data bytea NOT NULL)');
  const data = randomBytes(400);
  const t0 = performance.now();
  for (let from = 0; from < rows; from += batch) {
    const count = Math.min(batch, rows - from);
    const params: unknown[] = [data];
    const values = Array.from({ length: count }, (_, i) => {
      params.push(from + i, `task.bench${from + i}`);
      return `($${params.length - 1}, $${params.length}, $1)`;
    });
    await inTransaction(pool, (c) => c.query(`INSERT INTO bench_rows (seq, subject, data) VALUES ${values.join(', ')}`, params));
  }
  return rows / ((performance.now() - t0) / 1000);
}

/**
 * `handplane projections rebuild tasks` (platform `rebuildProjection`): the whole TASKS stream of
 * this run into shadow tables, then swapped in; run against a fresh database, so the live stack's
 * read model is left alone.
 */
export async function projectionRebuild(nats: Nats, t: Topology): Promise<Row[]> {
  const info = await nats.jsm.streams.info(t.streams.TASKS);
  if (info.state.messages === 0) throw new Error('the TASKS stream is empty: run a figure that starts tasks first');
  const db = await freshDatabase('benchrebuild');
  const pool = createPool(db.url, 4);
  try {
    const report = await rebuildProjection(nats, pool, tasksProjection(t), { logger: createLogger('bench-rebuild', 'silent') });
    const tasks = (await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks')).rows[0]!.n;
    if (tasks === 0 || report.events < info.state.messages) throw new Error(`the rebuild read ${report.events} of ${info.state.messages} events into ${tasks} tasks`);
    const raw = await rawRowInserts(pool, report.events);
    return [
      {
        figure: `projection rebuild: \`handplane projections rebuild\` of \`tasks\` from ${report.events} TASKS events (${report.rows} rows) in a fresh database`,
        ours: value(report.events / report.seconds, 'events/s'),
        baselineLabel: 'raw Postgres insert of as many ~400 B rows, 200 per commit',
        baseline: value(raw, 'events/s'),
        note: `ours = ordered read of the stream, each event decoded, upcast and applied as the live projector does (guarded UPDATE/INSERTs) into shadow tables, 500 per transaction with the position, then the swap; ${projectionRebuildRate(report).toFixed(0)} read-model rows/s, ${report.seconds.toFixed(1)} s in all.`,
      },
    ];
  } finally {
    await pool.end();
    await db.drop();
  }
}
