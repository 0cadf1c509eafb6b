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

/**
 * Runs `fn` while this instance holds the advisory lock on `key`, waiting for it (unlike
 * `withLock`). Within one process the callers queue in memory first, so a burst holds one
 * Postgres connection, not one per caller.
 */
export async function underLock<T>(pool: Pool, key: string, fn: () => Promise<T>): Promise<T> {
  return local.run(key, async () => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`coordinator:${key}`]);
      return await fn();
    } finally {
      await c.query('COMMIT').catch(() => undefined);
      c.release();
    }
  });
}

/** One queue per key: `run` starts `fn` once every earlier `fn` of the same key has settled. */
class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key) ?? Promise.resolve();
    const mine = before.then(fn, fn);
    const tail = mine.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return mine;
  }
}

const local = new KeyedQueue();
