import { freshDatabase, waitFor } from '@handplane/testing';
import { createPool } from './database';

describe('createPool (real Postgres)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    db = await freshDatabase('pool');
  });
  afterAll(async () => {
    await db.drop();
  });

  // Found by the chaos suite: a Postgres restart killed the gateway and the coordinator through a
  // checked-out client (the projector's lock connection) that had no 'error' listener.
  it('reports the death of a checked-out, idle connection instead of crashing, and serves the next query', async () => {
    const errors: Error[] = [];
    const pool = createPool(db.url, 2, (e) => errors.push(e));
    const killer = createPool(db.url, 1);
    try {
      const held = await pool.connect();
      const pid = (await held.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      // What a Postgres restart does to every backend, done to this one only.
      await killer.query('SELECT pg_terminate_backend($1)', [pid]);
      await waitFor(() => errors.length > 0, 10_000, 'the pool to report the broken connection');
      expect(errors[0]!.message).toMatch(/terminat/i);
      await expect(held.query('SELECT 1')).rejects.toThrow();
      held.release();
      const r = await pool.query<{ one: number }>('SELECT 1 AS one');
      expect(r.rows[0]!.one).toBe(1);
    } finally {
      await pool.end();
      await killer.end();
    }
  });
});
