import { PROJECTION_NAMES, projectionRebuildReplySchema, projectionRebuildSubject } from '@handplane/contracts';
import { callRpc, signRebuildRequest } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { main, type Io } from '../cli/src/main';
import { startHarness, type Harness } from '../services/gateway/test/harness';

const ADMIN = 'operator-secret-for-tests';

/** The operator API of the gateway (`/v1/admin/projections`) and `handplane projections`, on the real NATS + Postgres. */
describe('projections admin API and CLI', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('projadmin', { ADMIN_TOKEN: ADMIN });
  }, 120_000);
  afterAll(() => h?.stop(), 60_000);

  const cli = async (argv: string[], env: Record<string, string> = { HANDPLANE_ADMIN_TOKEN: ADMIN }) => {
    let out = '';
    let err = '';
    const io: Io = { out: (c) => void (out += Buffer.from(c).toString()), err: (t) => void (err += t), stdin: process.stdin, env: { HANDPLANE_URL: h.baseUrl, ...env }, interactive: false, onInterrupt: () => () => undefined };
    const code = await main(argv, io);
    return { code, out, err };
  };

  it('needs the operator token: a tenant user, however valid, and no token are refused', async () => {
    expect((await h.call('GET', '/v1/admin/projections', ['alice', 'acme'])).status).toBe(401);
    expect((await h.call('GET', '/v1/admin/projections', null)).status).toBe(401);
    expect((await h.call('POST', '/v1/admin/projections/conversations/rebuild', `${ADMIN}x`)).status).toBe(401);
    const ok = await h.call('GET', '/v1/admin/projections', ADMIN);
    expect(ok.status).toBe(200);
    expect(ok.json.map((p: { name: string }) => p.name)).toEqual(PROJECTION_NAMES);
  });

  it('an unknown name is a 404 that lists the valid ones; the CLI exits 2 saying the same', async () => {
    const r = await h.call('POST', '/v1/admin/projections/nope/rebuild', ADMIN);
    expect(r.status).toBe(404);
    expect(r.json.error.message).toContain(`valid names: ${PROJECTION_NAMES.join(', ')}`);
    const c = await cli(['projections', 'rebuild', 'nope']);
    expect(c.code).toBe(2);
    expect(c.err).toContain('unknown projection "nope"; valid names: conversations, runs');
    const noToken = await cli(['projections', 'ls'], {});
    expect([noToken.code, noToken.err]).toEqual([2, expect.stringMatching(/HANDPLANE_ADMIN_TOKEN/)]);
  });

  it('rebuilds a projection while serving: the read model answers the same before and after', async () => {
    const id = await h.conversation(['alice', 'acme'], 'kept');
    expect((await h.call('POST', `/v1/conversations/${id}/members`, ['alice', 'acme'], { userId: 'bob' })).status).toBe(204);
    await waitFor(async () => (await h.call('GET', `/v1/conversations/${id}`, ['bob', 'acme'])).status === 200, 20_000, 'bob sees it');
    const before = (await h.call('GET', `/v1/conversations/${id}`, ['alice', 'acme'])).json;

    const c = await cli(['projections', 'rebuild', 'conversations']);
    expect({ code: c.code, err: c.err }).toEqual({ code: 0, err: expect.stringContaining('rebuilding conversations') });
    expect(c.out).toMatch(/^rebuilt conversations: 3 rows in \d+\.\d\d s \(\d+ rows\/s\), position \d+\n$/);
    expect((await h.call('GET', `/v1/conversations/${id}`, ['alice', 'acme'])).json).toEqual(before);

    const ls = await cli(['--json', 'projections', 'ls']);
    expect(ls.code).toBe(0);
    const conversations = JSON.parse(ls.out).find((p: { name: string }) => p.name === 'conversations');
    expect(conversations).toMatchObject({ rows: 3, rebuild: { status: 'done', rows: 3 } });
    expect((await cli(['projections', 'ls'])).out).toMatch(/^NAME +STREAM +POSITION +ROWS +LAST REBUILD\nconversations +\S*CONV +\d+ +3 +done /);
  });

  it('a rebuild asked for on the internal NATS without the operator token’s signature is refused, and nothing is rebuilt', async () => {
    const ask = (body: unknown) => callRpc(h.nats.nats.nc, projectionRebuildSubject(h.nats.topology.prefix, 'runs'), body, projectionRebuildReplySchema, 10_000);
    const before = await h.pool.query(`SELECT count(*)::int AS n FROM projection_rebuilds WHERE name = 'runs'`);
    for (const body of [{}, signRebuildRequest('a-guess', 'runs'), signRebuildRequest(ADMIN, 'todos')]) {
      expect(await ask(body)).toEqual({ ok: false, error: { code: 'forbidden', message: expect.stringMatching(/signed with the operator token/) } });
    }
    const signed = signRebuildRequest(ADMIN, 'runs');
    expect(await ask(signed)).toEqual({ ok: true, name: 'runs', status: 'running' });
    // The same signed request again (a replay) is refused.
    expect(await ask(signed)).toEqual({ ok: false, error: { code: 'forbidden', message: 'the rebuild request was already used' } });
    await waitFor(async () => ((await h.pool.query(`SELECT status FROM projection_rebuilds WHERE name = 'runs'`)).rows[0]?.status === 'done' ? true : undefined), 30_000, 'the signed rebuild to finish');
    expect(before.rows[0].n).toBe(0);
  }, 60_000);

  it('a projection whose host is not running answers 503, and the CLI fails with it', async () => {
    // This harness runs the gateway only: the coordinator hosts `tasks`.
    const r = await h.call('POST', '/v1/admin/projections/tasks/rebuild', ADMIN);
    expect([r.status, r.json.error.code]).toEqual([503, 'unavailable']);
    const c = await cli(['projections', 'rebuild', 'tasks']);
    expect([c.code, c.err]).toEqual([1, expect.stringContaining('(503 unavailable)')]);
  }, 60_000);
});
