import { decodeConversationEvent } from '@handplane/contracts';
import { freshDatabase, testNats } from '@handplane/testing';
import { createLogger } from '../logger';
import { EventStore } from '../nats/event-store';
import { createPool } from './database';
import { projectorPosition, runProjector, waitForProjection, type Projection } from './projector';

const at = '2026-01-01T00:00:00.000Z';

describe('runProjector (real JetStream + Postgres)', () => {
  let env: Awaited<ReturnType<typeof testNats>>;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    env = await testNats('pj');
    db = await freshDatabase('pj');
  });
  afterAll(async () => {
    await env.close();
    await db.drop();
  });

  it('applies each event once, in order, with its position in the same transaction, across restarts and two replicas', async () => {
    const pool = createPool(db.url);
    await pool.query('CREATE TABLE probe (seq bigint PRIMARY KEY, reason text NOT NULL)');
    const projection: Projection = {
      name: 'probe',
      stream: env.topology.streams.CONV,
      async apply(c, m) {
        const e = decodeConversationEvent(m.data);
        await c.query('INSERT INTO probe (seq, reason) VALUES ($1, $2)', [m.seq, (e.data as { reason: string }).reason]);
      },
    };
    const store = new EventStore(env.nats);
    const logger = createLogger('test', 'silent');
    const publish = (i: number) => store.publish(env.topology.conv('c'), { type: 'wait.invalidated', data: { reason: `r${i}` }, metadata: { at } }, `p${i}`);

    let last = 0;
    for (let i = 0; i < 50; i++) last = (await publish(i)).seq;
    await env.nats.js.publish(env.topology.conv('c'), Buffer.from('{"broken":')); // skipped, not blocking
    const a = runProjector(env.nats, pool, projection, logger);
    const b = runProjector(env.nats, pool, projection, logger); // a second replica: stands by
    try {
      expect(await waitForProjection(pool, 'probe', last + 1, 20_000)).toBe(true);
      await a.stop(); // leadership moves to b
      for (let i = 50; i < 80; i++) last = (await publish(i)).seq;
      expect(await waitForProjection(pool, 'probe', last, 20_000)).toBe(true);
      const rows = await pool.query<{ reason: string }>('SELECT reason FROM probe ORDER BY seq');
      expect(rows.rows.map((r) => r.reason)).toEqual(Array.from({ length: 80 }, (_, i) => `r${i}`));
      expect(await projectorPosition(pool, 'probe')).toBe(last);
    } finally {
      await b.stop();
      await a.stop();
      await pool.end();
    }
  });
});
