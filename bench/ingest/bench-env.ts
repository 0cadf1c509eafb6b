// Shared pieces of the ingestion benches: a throw-away NATS prefix and database, the raw baselines
// measured in the same run, percentiles and the printed table. Not part of any test run.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'pg';
import { loadConfig, type Topology } from '@handplane/contracts';
import type { TaskEvent } from '@handplane/domain';
import { createPool, inTransaction, type EventStore, type Nats } from '@handplane/platform';
import { freshDatabase, NATS_URL, prepareTemplateDatabase, testNats } from '@handplane/testing';
import { spawnIngestor, type IngestorChild } from '../../services/log-ingestor/test/child';

export const MiB = 1024 * 1024;
const ROW = 64 * 1024;

/** NATS streams under a fresh prefix, a fresh migrated database, and the means to start ingestor processes. */
export async function benchEnv(label: string) {
  await prepareTemplateDatabase();
  const env = await testNats(label);
  const db = await freshDatabase(label);
  const pool = createPool(db.url, 4);
  const children: IngestorChild[] = [];
  return {
    env,
    db,
    pool,
    config: loadConfig({ NATS_URL, NATS_PREFIX: env.prefix, DATABASE_URL: db.url, LOG_LEVEL: 'silent' }),
    /** An ingestor in its own process (its RSS is then its own). */
    async ingestor(vars: Record<string, string> = {}): Promise<IngestorChild> {
      const c = await spawnIngestor({ NATS_URL, NATS_PREFIX: env.prefix, DATABASE_URL: db.url, INGESTOR_PORT: '0', TEST_LEASE_MS: '15000', TEST_CLAIM_INTERVAL_MS: '20', ...vars });
      children.push(c);
      return c;
    },
    async close() {
      for (const c of children) await c.kill();
      await pool.end();
      await env.close();
      await db.drop();
    },
  };
}

/** What the coordinator appends for a started command: TaskRegistered, then TaskStarted (`windowMs` = foreground window). */
export async function appendStartedTask(store: EventStore, t: Topology, a: { taskId: string; commandId: string; conversationId: string; runnerId: string }, windowMs = 0): Promise<void> {
  const at = new Date().toISOString();
  const registered: TaskEvent = {
    type: 'TaskRegistered',
    data: { taskId: a.taskId, commandId: a.commandId, conversationId: a.conversationId, tenant: 'bench', userId: 'u1', origin: 'user', command: 'bench', cwd: '', env: {}, epoch: 1, attempt: 1, foregroundWindowMs: windowMs, timeoutMs: 3_600_000, registeredAt: at },
    metadata: { at, actor: 'u1' },
  };
  const started: TaskEvent = { type: 'TaskStarted', data: { taskId: a.taskId, commandId: a.commandId, attempt: 1, runnerId: a.runnerId, startedAt: at }, metadata: { at } };
  const s1 = await store.append(t.task(a.taskId), [registered], { expectedLastSeq: 0, msgId: `${a.taskId}:registered` });
  await store.append(t.task(a.taskId), [started], { expectedLastSeq: s1, msgId: `${a.taskId}:1:started` });
}

/** Raw JetStream: `total` bytes as 64 KiB messages into the LOGS stream, `window` publishes in flight, with msg ids like the ingestor's. */
export async function rawJetStreamThroughput(nats: Nats, subject: string, total: number, window = 64): Promise<number> {
  const data = randomBytes(ROW);
  const inFlight = new Set<Promise<unknown>>();
  const t0 = performance.now();
  for (let offset = 0; offset < total; offset += ROW) {
    const p = nats.js.publish(subject, data, { msgID: `raw:${offset}` }).finally(() => inFlight.delete(p));
    inFlight.add(p);
    if (inFlight.size >= window) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  return total / MiB / ((performance.now() - t0) / 1000);
}

/** Raw Postgres: `total` bytes as 64 KiB bytea rows into `command_log`, 16 rows (one 1 MiB batch) per committed transaction. */
export async function rawPostgresThroughput(pool: Pool, total: number, rowsPerTx = 16): Promise<number> {
  // Random bytes like command output at its worst: compressible data would flatter Postgres (TOAST).
  const data = randomBytes(ROW);
  const t0 = performance.now();
  for (let offset = 0; offset < total; offset += ROW * rowsPerTx) {
    await inTransaction(pool, async (c) => {
      const params: unknown[] = ['raw-bench'];
      const values = Array.from({ length: rowsPerTx }, (_, i) => {
        params.push(offset + i * ROW, data);
        return `($1, $${params.length - 1}, 1, $${params.length})`;
      });
      await c.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ${values.join(', ')}`, params);
    });
  }
  const mbs = total / MiB / ((performance.now() - t0) / 1000);
  await pool.query(`DELETE FROM command_log WHERE command_id = 'raw-bench'`);
  return mbs;
}

/**
 * Both stores as the ingestor writes them, minus the ingestor: per 1 MiB batch one transaction
 * inserting 16 random 64 KiB rows while the same rows are published to LOGS, then the commit.
 */
export async function rawBothThroughput(pool: Pool, nats: Nats, subject: string, total: number): Promise<number> {
  const rows = 16;
  const data = randomBytes(ROW);
  const t0 = performance.now();
  for (let offset = 0; offset < total; offset += ROW * rows) {
    await inTransaction(pool, async (c) => {
      const params: unknown[] = ['raw-both'];
      const values = Array.from({ length: rows }, (_, i) => {
        params.push(offset + i * ROW, data);
        return `($1, $${params.length - 1}, 1, $${params.length})`;
      });
      await Promise.all([
        c.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ${values.join(', ')}`, params),
        ...Array.from({ length: rows }, (_, i) => nats.js.publish(subject, data, { msgID: `both:${offset + i * ROW}` })),
      ]);
    });
  }
  const mbs = total / MiB / ((performance.now() - t0) / 1000);
  await pool.query(`DELETE FROM command_log WHERE command_id = 'raw-both'`);
  return mbs;
}

/** Latency of one small JetStream publish until its ack, `n` times in a row. */
export async function rawJetStreamLatency(nats: Nats, subject: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await nats.js.publish(subject, Buffer.from(`ping ${i}`), { msgID: `lat:${i}` });
    out.push(performance.now() - t0);
  }
  return out;
}

/** Latency of one committed transaction inserting a small row, `n` times in a row. */
export async function rawPostgresLatency(pool: Pool, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await inTransaction(pool, (c) => c.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ('lat-bench', $1, 1, $2)`, [i, Buffer.from('x\n')]));
    out.push(performance.now() - t0);
  }
  await pool.query(`DELETE FROM command_log WHERE command_id = 'lat-bench'`);
  return out;
}

export function percentile(samples: number[], p: number): number {
  const s = [...samples].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Resident memory of a process now and at its peak (VmHWM), in MiB, from /proc. */
export function rssMiB(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { now: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** The buffering high-water marks an ingestor child reports on SIGUSR2. */
export async function childStats(child: IngestorChild): Promise<Record<string, number>> {
  const before = child.output().length;
  child.process.kill('SIGUSR2');
  for (let i = 0; i < 100; i++) {
    const m = /stats (\{.*\})\n/.exec(child.output().slice(before));
    if (m) return JSON.parse(m[1]!) as Record<string, number>;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('the ingestor child did not report its stats');
}

/** Prints rows as an aligned table. */
export function printTable(title: string, header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(`\n${title}\n${line(header)}\n|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|\n${rows.map(line).join('\n')}\n`);
}

export const fmt = (n: number, digits = 1) => n.toFixed(digits);
export const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
