import { performance } from 'node:perf_hooks';
import { Unavailable } from '@handplane/kernel';
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

/** Bounds of `underLock`: how many callers may queue per key, and how long one may wait in all. */
export interface LockBounds {
  readonly maxWaiting: number;
  readonly maxWaitMs: number;
}

/**
 * Runs `fn` while this instance holds the advisory lock on `key`, waiting for it (unlike
 * `withLock`). Within one process the callers queue in memory first, so a burst holds one
 * Postgres connection, not one per caller. Bounded: past `maxWaiting` callers queued on the key, or
 * when the turn (queue, then the lock) comes later than `maxWaitMs`, it throws Unavailable and `fn`
 * never runs (a caller that gave up meanwhile must not find its work done behind its back).
 */
export async function underLock<T>(pool: Pool, key: string, fn: () => Promise<T>, bounds: LockBounds): Promise<T> {
  const since = performance.now();
  const late = () => performance.now() - since > bounds.maxWaitMs;
  if (local.waiting(key) >= bounds.maxWaiting) throw new Unavailable(`too many requests are waiting for ${key} (${bounds.maxWaiting}); retry later`);
  return local.run(key, async () => {
    if (late()) throw new Unavailable(`waited more than ${bounds.maxWaitMs} ms for ${key}; nothing was done, retry`);
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      await c.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(bounds.maxWaitMs))}`);
      try {
        await c.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`coordinator:${key}`]);
      } catch (e) {
        if ((e as { code?: string }).code === '55P03') throw new Unavailable(`another coordinator held ${key} too long; nothing was done, retry`, { cause: e });
        throw e;
      }
      if (late()) throw new Unavailable(`waited more than ${bounds.maxWaitMs} ms for ${key}; nothing was done, retry`);
      return await fn();
    } finally {
      await c.query('COMMIT').catch(() => undefined);
      c.release();
    }
  });
}

/** One queue per key: `run` starts `fn` once every earlier `fn` of the same key has settled. */
class KeyedQueue {
  private readonly tails = new Map<string, { tail: Promise<unknown>; waiting: number }>();

  /** Callers queued or running on `key`. */
  waiting(key: string): number {
    return this.tails.get(key)?.waiting ?? 0;
  }

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const entry = this.tails.get(key) ?? { tail: Promise.resolve(), waiting: 0 };
    entry.waiting += 1;
    const mine = entry.tail.then(fn, fn);
    const tail = mine.catch(() => undefined);
    entry.tail = tail;
    this.tails.set(key, entry);
    void tail.then(() => {
      entry.waiting -= 1;
      if (entry.waiting === 0 && this.tails.get(key) === entry) this.tails.delete(key);
    });
    return mine;
  }
}

const local = new KeyedQueue();
