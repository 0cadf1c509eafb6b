import { Unavailable } from '@handplane/kernel';
import { createPool } from '@handplane/platform';
import { freshDatabase, waitFor } from '@handplane/testing';
import type { Pool } from 'pg';
import { underLock } from '../src/app/task-lock';

/** `underLock`, the per-tenant serialization of starts under budgets: in order, and bounded. */
describe('underLock (real Postgres advisory locks)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: Pool;
  beforeAll(async () => {
    db = await freshDatabase('tasklock');
    pool = createPool(db.url, 4);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  const gate = () => {
    let open!: () => void;
    const opened = new Promise<void>((r) => (open = r));
    return { open, opened };
  };

  it('runs one caller of a key at a time, in arrival order; other keys go on', async () => {
    const order: string[] = [];
    const g = gate();
    const first = underLock(pool, 'k1', async () => {
      order.push('a');
      await g.opened;
      return 'a';
    }, { maxWaiting: 10, maxWaitMs: 10_000 });
    const second = underLock(pool, 'k1', async () => (order.push('b'), 'b'), { maxWaiting: 10, maxWaitMs: 10_000 });
    await waitFor(async () => order.includes('a') || undefined, 5_000, 'the first caller to hold k1');
    // Another key is not held up by k1's holder.
    expect(await underLock(pool, 'k2', async () => (order.push('other'), 'other'), { maxWaiting: 10, maxWaitMs: 10_000 })).toBe('other');
    g.open();
    expect(await Promise.all([first, second])).toEqual(['a', 'b']);
    expect(order).toEqual(['a', 'other', 'b']);
  });

  it('refuses a caller past maxWaiting at once, and one whose turn came too late without running it', async () => {
    const g = gate();
    const ran: number[] = [];
    const bounds = { maxWaiting: 2, maxWaitMs: 300 };
    const holder = underLock(pool, 'k3', async () => {
      ran.push(1);
      await g.opened;
    }, bounds);
    const late = underLock(pool, 'k3', async () => void ran.push(2), bounds);
    await expect(underLock(pool, 'k3', async () => void ran.push(3), bounds)).rejects.toThrow(/too many requests are waiting for k3 \(2\)/);
    await new Promise((r) => setTimeout(r, 400));
    g.open();
    await holder;
    await expect(late).rejects.toBeInstanceOf(Unavailable);
    expect(ran).toEqual([1]);
    // Once the queue drained, the key works again.
    expect(await underLock(pool, 'k3', async () => 'ok', bounds)).toBe('ok');
  });

  it('gives up on a lock another process holds too long (lock_timeout), running nothing', async () => {
    const other = await pool.connect();
    try {
      await other.query('BEGIN');
      await other.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', ['coordinator:k4']);
      let ran = false;
      await expect(underLock(pool, 'k4', async () => void (ran = true), { maxWaiting: 5, maxWaitMs: 300 })).rejects.toThrow(/held k4 too long/);
      expect(ran).toBe(false);
    } finally {
      await other.query('COMMIT');
      other.release();
    }
  });
});
