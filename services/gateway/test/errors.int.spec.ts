import { SignJWT } from 'jose';
import { expectError, SECRET, startHarness, type Harness } from './harness';

/** Authentication and the error contract: status codes and `{error: {code, message}}` always. */
describe('gateway errors and auth (real NATS + Postgres)', () => {
  let h: Harness;
  let conv: string;
  const alice: [string, string] = ['alice', 'acme'];
  beforeAll(async () => {
    h = await startHarness('gwerr');
    conv = await h.conversation(alice);
  });
  afterAll(() => h?.stop());

  const sign = (claims: Record<string, unknown>, secret = SECRET, exp: number | null = Math.floor(Date.now() / 1000) + 600) => {
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' });
    if (exp !== null) jwt.setExpirationTime(exp);
    return jwt.sign(new TextEncoder().encode(secret));
  };

  it('answers 401 JSON for a missing, forged, expired or incomplete token', async () => {
    const path = `/v1/conversations/${conv}`;
    const missing = await h.call('GET', path, null);
    expectError(missing, 401, 'unauthorized');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expectError(await h.call('GET', path, 'not-a-jwt'), 401, 'unauthorized');
    expectError(await h.call('GET', path, await sign({ sub: 'alice', tenant: 'acme' }, 'another-secret')), 401, 'unauthorized');
    expectError(await h.call('GET', path, await h.token('alice', 'acme', -120)), 401, 'unauthorized');
    expectError(await h.call('GET', path, await sign({ sub: 'alice', tenant: 'acme' }, SECRET, null)), 401, 'unauthorized');
    expectError(await h.call('GET', path, await sign({ sub: 'alice' })), 401, 'unauthorized');
    expectError(await h.call('GET', path, await sign({ tenant: 'acme' })), 401, 'unauthorized');
    // alg "none" with the right claims must not pass.
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'alice', tenant: 'acme', exp: 9e9 })).toString('base64url')}.`;
    expectError(await h.call('GET', path, none), 401, 'unauthorized');
    // A valid token for the same request works (the cases above failed for their token only).
    expect((await h.call('GET', path, await sign({ sub: 'alice', tenant: 'acme', name: 'Alice' }))).status).toBe(200);
  });

  it('answers 401 on every implemented API route without a token', async () => {
    const routes: [string, string][] = [
      ['POST', '/v1/conversations'],
      ['GET', `/v1/conversations/${conv}`],
      ['POST', `/v1/conversations/${conv}/members`],
      ['POST', `/v1/conversations/${conv}/messages`],
      ['POST', `/v1/conversations/${conv}/commands`],
      ['GET', `/v1/conversations/${conv}/tasks`],
      ['GET', `/v1/conversations/${conv}/events`],
      ['GET', '/v1/tasks/t1'],
      ['GET', '/v1/tasks/t1/output?offset=0'],
    ];
    for (const [method, path] of routes) expectError(await h.call(method, path, null, method === 'POST' ? {} : undefined), 401, 'unauthorized');
  });

  it('answers 400 for malformed JSON and 413 for a body over 1 MiB, writing nothing', async () => {
    const before = await h.nats.nats.jsm.streams.info(h.nats.topology.streams.CONV);
    const malformed = await h.call('POST', `/v1/conversations/${conv}/messages`, alice, '{"text": ');
    expectError(malformed, 400, 'bad_request');
    expectError(await h.call('POST', '/v1/conversations', alice, '{"title": "x",}'), 400, 'bad_request');
    const big = await h.call('POST', `/v1/conversations/${conv}/messages`, alice, { text: 'x'.repeat(1024 * 1024 + 10) });
    expectError(big, 413, 'too_large');
    // Just under the limit is parsed (and then refused by the 256 KiB text rule: 422, not 413).
    expectError(await h.call('POST', `/v1/conversations/${conv}/messages`, alice, { text: 'x'.repeat(1000 * 1000) }), 422, 'validation');
    const after = await h.nats.nats.jsm.streams.info(h.nats.topology.streams.CONV);
    expect(after.state.messages).toBe(before.state.messages);
  });

  it('answers 422 with the issues for wrong types, empty values and unknown fields', async () => {
    const cmd = `/v1/conversations/${conv}/commands`;
    for (const body of [{ command: '   ' }, { command: '' }, { command: 42 }, {}, { command: 'ls', extra: 1 }, { command: 'ls', env: { 'BAD-NAME': 'x' } }, { command: 'ls', timeoutMs: -1 }, [1, 2]]) {
      const r = await h.call('POST', cmd, alice, body);
      expectError(r, 422, 'validation');
      expect(r.json.error.issues.length).toBeGreaterThan(0);
    }
    expectError(await h.call('POST', '/v1/conversations', alice, { title: 5 }), 422, 'validation');
    expectError(await h.call('POST', '/v1/conversations', alice, { title: 't', owner: 'x' }), 422, 'validation');
    expectError(await h.call('POST', `/v1/conversations/${conv}/members`, alice, { userId: 7 }), 422, 'validation');
    expectError(await h.call('POST', `/v1/conversations/${conv}/members`, alice, { userId: 'bob', tenant: 'evil' }), 422, 'validation');
    expectError(await h.call('POST', `/v1/conversations/${conv}/messages`, alice, { text: '' }), 422, 'validation');
    expectError(await h.call('POST', `/v1/conversations/${conv}/messages`, alice, { text: 'hi', clientMessageId: 3 }), 422, 'validation');
    expectError(await h.call('GET', '/v1/tasks/t1/output?offset=-1', alice), 404, 'not_found'); // unknown task first
  });

  it('answers unknown routes and unrouted methods with 404 JSON', async () => {
    expectError(await h.call('GET', '/nope', null), 404, 'not_found');
    expectError(await h.call('GET', '/v1/conversations', alice), 404, 'not_found');
    expectError(await h.call('DELETE', `/v1/conversations/${conv}`, alice), 404, 'not_found');
    // Stdin of a task that does not exist.
    expectError(await h.call('POST', '/v1/tasks/t1/stdin', alice, { attempt: 1, data: 'x' }), 404, 'not_found');
  });

  it('serves /healthz without a token', async () => {
    const r = await h.call('GET', '/healthz', null);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ status: 'ok' });
  });
});
