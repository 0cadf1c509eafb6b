import type { Pool } from 'pg';

/**
 * Runs `fn` while this instance holds a Postgres advisory lock on `key` (transaction scoped, so a
 * crashed holder frees it with its connection). Answers undefined, running nothing, when another
 * instance holds it: two coordinators never signal or reconcile the same task at the same time.
 */
export async function withLock<T>(pool: Pool, key: string, fn: () => Promise<T>): Promise<T | undefined> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    const got = await c.query<{ ok: boolean }>('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS ok', [`coordinator:${key}`]);
    if (!got.rows[0]!.ok) return undefined;
    return await fn();
  } finally {
    await c.query('COMMIT').catch(() => undefined);
    c.release();
  }
}
