import { Client, Pool, type PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { Unavailable } from '@handplane/kernel';
import { Initial1764450000001 } from './migrations/0001-initial';
import { TaskCoordinatorWindows1764450000210 } from './migrations/0002-task-coordinator-windows';
import { TaskCoordinatorStops1764450000230 } from './migrations/0003-task-coordinator-stops';
import { LogIngestorCap1764450000400 } from './migrations/0004-log-ingestor-cap';
import { GatewayPrompts1764450000500 } from './migrations/0005-gateway-prompts';
import { TaskReceiptsBudgets1764450000600 } from './migrations/0006-task-receipts-budgets';
import { Projections1764450000700 } from './migrations/0007-projections';
import { TaskWaitConditions1764450000800 } from './migrations/0008-task-wait-conditions';
import { GatewayRateLimits1764450000900 } from './migrations/0009-gateway-rate-limits';
import { TaskPrompts1764450001000 } from './migrations/0010-task-prompts';
import { TaskTraceparent1764450001100 } from './migrations/0011-task-traceparent';

/** Every migration, in order. Never `synchronize`. */
export const MIGRATIONS = [Initial1764450000001, TaskCoordinatorWindows1764450000210, TaskCoordinatorStops1764450000230, LogIngestorCap1764450000400, GatewayPrompts1764450000500, TaskReceiptsBudgets1764450000600, Projections1764450000700, TaskWaitConditions1764450000800, GatewayRateLimits1764450000900, TaskPrompts1764450001000, TaskTraceparent1764450001100];

/** Creates the database named in `url` when it does not exist. */
export async function ensureDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`unsupported database name ${JSON.stringify(name)}`);
  u.pathname = '/postgres';
  const c = new Client({ connectionString: u.toString() });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const r = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (r.rowCount === 0) await c.query(`CREATE DATABASE "${name}"`).catch((e) => {
      if (!/already exists/.test(String(e))) throw e;
    });
  } finally {
    await c.end();
  }
}

/** Runs pending migrations under an advisory lock, so services starting together do not race. */
export async function migrate(url: string): Promise<string[]> {
  await ensureDatabase(url);
  const ds = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS, migrationsTableName: 'migrations', logging: false });
  await ds.initialize();
  try {
    await ds.query('SELECT pg_advisory_lock(884422)');
    try {
      const done = await ds.runMigrations({ transaction: 'each' });
      return done.map((m) => m.name);
    } finally {
      await ds.query('SELECT pg_advisory_unlock(884422)');
    }
  } finally {
    await ds.destroy();
  }
}

/** How long `createPool`'s callers wait for a free client (or a new connection) before an error. */
export const POOL_WAIT_MS = 15_000;

/**
 * A pool whose client errors are logged instead of crashing the process. pg-pool listens for errors
 * only on idle clients: a checked-out client that sits between queries (a session advisory lock held
 * by a projector leader, a lock held across gRPC calls) emits 'error' with no listener when Postgres
 * restarts, and Node kills the process. So every client gets its own listener for its whole life; a
 * broken client fails its next query and is dropped by the pool when released.
 */
export function createPool(url: string, max = 10, onError: (e: Error) => void = () => undefined, connectionTimeoutMs = POOL_WAIT_MS): Pool {
  // Bounded: a caller that cannot get a client (all of them held) fails after `connectionTimeoutMs`
  // and is retried by its consumer or sweep, instead of waiting forever behind a stuck holder.
  const pool = new Pool({ connectionString: url, max, idleTimeoutMillis: 30_000, connectionTimeoutMillis: connectionTimeoutMs });
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  return pool;
}

/** Runs `fn` in a transaction; rolls back on any error. */
export async function inTransaction<T>(pool: Pool, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  let c: PoolClient;
  try {
    c = await pool.connect();
  } catch (cause) {
    throw new Unavailable('cannot reach Postgres', { cause });
  }
  try {
    await c.query('BEGIN');
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    c.release();
  }
}
