import { Pool } from 'pg';
import { freshDatabase } from '@handplane/testing';
import { readCommandLog } from '../src/app/tools/command-log';

describe('reading the Command Log (real Postgres)', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let pool: Pool;
  const chunks = [Buffer.from('hello '), Buffer.from([0xff, 0x00, 0x01]), Buffer.from(' world\n')];

  beforeAll(async () => {
    db = await freshDatabase('cmdlog');
    pool = new Pool({ connectionString: db.url });
    pool.on('error', () => undefined);
    let offset = 0;
    for (const c of chunks) {
      await pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ('c1', $1, 1, $2)`, [offset, c]);
      offset += c.length;
    }
    await pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ('c2', 0, 1, 'ab'), ('c2', 5, 1, 'fg')`);
  });
  afterAll(async () => {
    await pool?.end();
    await db?.drop();
  });

  it('returns the exact bytes from any offset, across chunks', async () => {
    const all = Buffer.concat(chunks);
    for (const offset of [0, 3, 6, 7, 9, all.length]) {
      const r = await readCommandLog(pool, 'c1', offset, 1024);
      expect(r.bytes.equals(all.subarray(offset))).toBe(true);
      expect(r.nextOffset).toBe(all.length);
    }
  });

  it('stops at the cap and continues from nextOffset', async () => {
    const a = await readCommandLog(pool, 'c1', 2, 5);
    expect(a).toEqual({ bytes: Buffer.from('llo \xff'.split('').map((ch) => ch.charCodeAt(0))), nextOffset: 7 });
    const b = await readCommandLog(pool, 'c1', a.nextOffset, 5);
    expect(b.bytes.equals(Buffer.from([0x00, 0x01, 0x20, 0x77, 0x6f]))).toBe(true);
  });

  it('stops at a gap instead of skipping bytes that are not durable yet', async () => {
    expect(await readCommandLog(pool, 'c2', 0, 100)).toEqual({ bytes: Buffer.from('ab'), nextOffset: 2 });
  });

  it('walks over the range the output cap dropped and names it on every read', async () => {
    await pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ('c3', 0, 1, 'head'), ('c3', 100, 1, 'tail')`);
    await pool.query(
      `INSERT INTO ingest_cursors (command_id, task_id, conversation_id, attempt, runner_id, committed_offset, end_offset, result_state, dropped_from, dropped_to)
       VALUES ('c3', 't3', 'conv', 1, 'r1', 104, 104, 'readable', 4, 100)`,
    );
    const dropped = { from: 4, to: 100 };
    expect(await readCommandLog(pool, 'c3', 0, 100)).toEqual({ bytes: Buffer.from('head'), nextOffset: 4, dropped });
    expect(await readCommandLog(pool, 'c3', 4, 100)).toEqual({ bytes: Buffer.alloc(0), nextOffset: 100, dropped });
    expect(await readCommandLog(pool, 'c3', 57, 100)).toEqual({ bytes: Buffer.alloc(0), nextOffset: 100, dropped });
    expect(await readCommandLog(pool, 'c3', 100, 100)).toEqual({ bytes: Buffer.from('tail'), nextOffset: 104, dropped });
  });

  it('reads nothing for an unknown command', async () => {
    expect(await readCommandLog(pool, 'nope', 0, 100)).toEqual({ bytes: Buffer.alloc(0), nextOffset: 0 });
  });
});
