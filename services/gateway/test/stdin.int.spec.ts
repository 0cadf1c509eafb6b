import { writeStdinRequestSchema, type WriteStdinRequest } from '@handplane/contracts';
import { insertTask, responder } from './doubles';
import { expectError, startHarness, type Harness } from './harness';

/**
 * `POST /v1/tasks/:taskId/stdin` against a stand-in coordinator on the real RPC subject: body
 * mapping, membership and tenant isolation (404, the coordinator never asked), validation (422),
 * size (413) and the coordinator's refusals (409, 413).
 */
describe('gateway stdin (real NATS + Postgres)', () => {
  let h: Harness;
  let conv: string;
  let task: string;
  const alice: [string, string] = ['alice', 'acme'];
  let answer: (req: WriteStdinRequest) => unknown = () => ({ ok: false, error: { code: 'internal', message: 'unset' } });
  let coordinator: ReturnType<typeof responder<typeof writeStdinRequestSchema>>;

  beforeAll(async () => {
    h = await startHarness('gwstdin', {}, { projectionWaitMs: 2000, rpcTimeoutMs: 1500 });
    conv = await h.conversation(alice);
    task = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    coordinator = responder(h, h.nats.topology.rpc.writeStdin, writeStdinRequestSchema, (req) => answer(req));
  });
  afterAll(async () => {
    coordinator?.stop();
    await h?.stop();
  });
  beforeEach(() => coordinator.seen.splice(0));

  const post = (body: unknown, as: [string, string] = alice, taskId = task) => h.call('POST', `/v1/tasks/${taskId}/stdin`, as, body);
  const accept = (req: WriteStdinRequest) => {
    const bytes = Buffer.from(req.data, 'base64').length;
    return { ok: true, taskId: req.taskId, attempt: 1, bytes, closed: req.close ?? false, totalBytes: bytes + 10 };
  };

  it('202: utf8 text and base64 bytes reach the coordinator as base64, with the caller, attempt and close', async () => {
    answer = accept;
    const text = await post({ data: 'y\n', attempt: 1 });
    expect(text.status).toBe(202);
    expect(text.json).toEqual({ taskId: task, attempt: 1, bytes: 2, closed: false, totalBytes: 12 });
    const binary = Buffer.from([0, 0xff, 0x80, 0x0a]);
    const raw = await post({ data: binary.toString('base64'), encoding: 'base64', close: true });
    expect(raw.status).toBe(202);
    expect(raw.json).toMatchObject({ bytes: 4, closed: true });
    const closeOnly = await post({ close: true });
    expect(closeOnly.status).toBe(202);
    expect(coordinator.seen).toEqual([
      { tenant: 'acme', userId: 'alice', taskId: task, attempt: 1, data: Buffer.from('y\n').toString('base64'), close: false, via: 'user' },
      { tenant: 'acme', userId: 'alice', taskId: task, data: binary.toString('base64'), close: true, via: 'user' },
      { tenant: 'acme', userId: 'alice', taskId: task, data: '', close: true, via: 'user' },
    ]);
  });

  it('404 for another tenant, a non-member and an unknown task; the coordinator is never asked', async () => {
    answer = accept;
    expectError(await post({ data: 'y\n' }, ['mallory', 'evil']), 404, 'not_found');
    expectError(await post({ data: 'y\n' }, ['bob', 'acme']), 404, 'not_found');
    expectError(await post({ data: 'y\n' }, alice, 'no-such-task'), 404, 'not_found');
    expectError(await h.call('POST', `/v1/tasks/${task}/stdin`, null, { data: 'y' }), 401, 'unauthorized');
    expect(coordinator.seen).toEqual([]);
  });

  it('422 for a bad body, 413 past 64 KiB of bytes; nothing reaches the coordinator', async () => {
    answer = accept;
    expectError(await post({}), 422, 'validation');
    expectError(await post({ data: '' }), 422, 'validation');
    expectError(await post({ data: 5 }), 422, 'validation');
    expectError(await post({ data: 'x', encoding: 'latin1' }), 422, 'validation');
    expectError(await post({ data: 'not base64!', encoding: 'base64' }), 422, 'validation');
    expectError(await post({ data: 'x', attempt: -1 }), 422, 'validation');
    expectError(await post({ data: 'x', extra: true }), 422, 'validation');
    const big = await post({ data: 'x'.repeat(64 * 1024 + 1) });
    expectError(big, 413, 'too_large');
    expect(big.json.error.message).toMatch(/65537 bytes; at most 65536/);
    expect((await post({ data: 'x'.repeat(64 * 1024) })).status).toBe(202);
    expect(coordinator.seen).toHaveLength(1);
  });

  it('maps the coordinator refusals: stale attempt and finished task 409, too large 413, no coordinator 503', async () => {
    answer = () => ({ ok: false, error: { code: 'conflict', message: "attempt 1 is not the task's current attempt (2)" } });
    expectError(await post({ data: 'y\n', attempt: 1 }), 409, 'conflict');
    answer = () => ({ ok: false, error: { code: 'illegal_state', message: 'task t has finished (succeeded): its stdin takes no input' } });
    const finished = await post({ data: 'y\n' });
    expectError(finished, 409, 'illegal_state');
    expect(finished.json.error.message).toMatch(/has finished/);
    answer = () => ({ ok: false, error: { code: 'too_large', message: 'too big' } });
    expectError(await post({ data: 'y\n' }), 413, 'too_large');
    coordinator.stop();
    try {
      expectError(await post({ data: 'y\n' }), 503, 'unavailable');
    } finally {
      coordinator = responder(h, h.nats.topology.rpc.writeStdin, writeStdinRequestSchema, (req) => answer(req));
    }
  });
});
