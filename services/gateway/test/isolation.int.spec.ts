import { decodeConversationEvent } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import { insertTask, projected, publishConv, responder } from './doubles';
import { expectError, startHarness, type Harness } from './harness';
import { openSse } from './sse-client';
import { startTaskRequestSchema, stopAllRequestSchema, stopTaskRequestSchema } from '@handplane/contracts';

/**
 * Tenant isolation: every endpoint and verb, called with ids of another tenant or of a conversation
 * the caller is not in, answers 404 and changes nothing; a forged tenant header is ignored; a foreign
 * Last-Event-ID shows nothing foreign; a stream ends when its token expires.
 */
describe('gateway tenant isolation (real NATS + Postgres)', () => {
  let h: Harness;
  const alice: [string, string] = ['alice', 'acme'];
  const at = '2026-01-01T00:00:00.000Z';
  let conv: string;
  let task: string;
  let foreignConv: string;
  let foreignTask: string;
  const coordinatorCalls: unknown[] = [];
  const stops: (() => void)[] = [];

  beforeAll(async () => {
    h = await startHarness('gwiso', {}, { projectionWaitMs: 2000, rpcTimeoutMs: 1000 });
    conv = await h.conversation(alice);
    task = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    foreignConv = await h.conversation(['mallory', 'evil']);
    foreignTask = await insertTask(h, { conversationId: foreignConv, tenant: 'evil', userId: 'mallory' });
    const events: [ConversationEvent, string][] = [
      [{ type: 'approval.requested', data: { approvalId: 'ap1', runId: 'r1', command: 'deploy', reason: 'prod' }, metadata: { at } }, 'iso-ap1'],
      [{ type: 'question.asked', data: { questionId: 'q1', runId: 'r1', text: 'sure?' }, metadata: { at } }, 'iso-q1'],
    ];
    let seq = 0;
    for (const [e, id] of events) seq = await publishConv(h, conv, e, id);
    await projected(h, seq);
    // Any request that reaches the coordinator is recorded: none may, for a caller who cannot see the ids.
    for (const [subject, schema] of [
      [h.nats.topology.rpc.startTask, startTaskRequestSchema],
      [h.nats.topology.rpc.stopTask, stopTaskRequestSchema],
      [h.nats.topology.rpc.stopAll, stopAllRequestSchema],
    ] as const) {
      stops.push(responder(h, subject, schema, (req: unknown) => (coordinatorCalls.push(req), { ok: false, error: { code: 'internal', message: 'must not be called' } })).stop);
    }
  });
  afterAll(async () => {
    stops.forEach((s) => s());
    await h?.stop();
  });

  const history = async (id: string) => (await h.store.read(h.nats.topology.streams.CONV, h.nats.topology.conv(id), decodeConversationEvent)).events;

  /** Every API route with a conversation id `c`, task id `t`, approval `a` and question `q`. */
  const routes = (c: string, t: string): [string, string, unknown?][] => [
    ['GET', `/v1/conversations/${c}`],
    ['POST', `/v1/conversations/${c}/members`, { userId: 'mallory' }],
    ['POST', `/v1/conversations/${c}/messages`, { text: 'hi' }],
    ['POST', `/v1/conversations/${c}/commands`, { command: 'cat /etc/passwd' }],
    ['GET', `/v1/conversations/${c}/tasks`],
    ['POST', `/v1/conversations/${c}/stop-all`, {}],
    ['POST', `/v1/conversations/${c}/approvals/ap1`, { decision: 'approve' }],
    ['POST', `/v1/conversations/${c}/questions/q1/answer`, { text: 'yes' }],
    ['GET', `/v1/conversations/${c}/events`],
    ['GET', `/v1/conversations/${c}/events?after=0`],
    ['POST', `/v1/conversations/${c}/events/ticket`],
    ['GET', `/v1/conversations/${c}/audit`],
    ['GET', `/v1/conversations/${c}/audit?include=tasks`],
    ['GET', `/v1/tasks/${t}/audit`],
    ['GET', `/v1/tasks/${t}/output/follow`],
    ['GET', `/v1/tasks/${t}`],
    ['GET', `/v1/tasks/${t}/output?offset=0`],
    ['POST', `/v1/tasks/${t}/stop`, { attempt: 1 }],
  ];

  it.each([
    ['another tenant', ['mallory', 'evil']],
    ['the same user name in another tenant', ['alice', 'evil']],
    ['a non-member of the same tenant', ['bob', 'acme']],
  ])('answers 404 to %s on every endpoint and changes nothing', async (_who, caller) => {
    const as = caller as [string, string];
    const before = (await history(conv)).length;
    for (const [method, path, body] of routes(conv, task)) {
      const r = await h.call(method, path, as, body);
      expect({ method, path, status: r.status, code: r.json?.error?.code }).toEqual({ method, path, status: 404, code: 'not_found' });
    }
    // The registry shows none of it either.
    expect((await h.call('GET', '/v1/tasks', as)).json.map((t: { taskId: string }) => t.taskId)).not.toContain(task);
    expect((await h.call('GET', `/v1/tasks?conversation=${conv}`, as)).json).toEqual([]);
    expect((await history(conv)).length).toBe(before);
    expect(coordinatorCalls).toEqual([]);
    const view = (await h.call('GET', `/v1/conversations/${conv}`, alice)).json;
    expect(view.members.map((m: { userId: string }) => m.userId)).toEqual(['alice']);
    expect([view.approvals.length, view.questions.length]).toEqual([1, 1]);
  });

  it('answers 404 JSON to the verbs no route has, on every path', async () => {
    for (const [, path] of routes(conv, task)) {
      for (const method of ['PUT', 'PATCH', 'DELETE']) expectError(await h.call(method, path, alice, {}), 404, 'not_found');
    }
  });

  it('takes the tenant from the token only: tenant headers and body fields change nothing', async () => {
    const forged = { 'x-tenant': 'acme', 'x-tenant-id': 'acme', tenant: 'acme', 'x-handplane-tenant': 'acme' };
    for (const [method, path, body] of routes(conv, task)) expect((await h.call(method, path, ['mallory', 'evil'], body, forged)).status).toBe(404);
    expectError(await h.call('GET', `/v1/tasks/${foreignTask}`, alice, undefined, { 'x-tenant': 'evil' }), 404, 'not_found');
    expectError(await h.call('POST', '/v1/conversations', ['mallory', 'evil'], { title: 't', tenant: 'acme' }), 422, 'validation');
    const made = await h.call('POST', '/v1/conversations', ['mallory', 'evil'], { title: 'forged' }, forged);
    expect(made.status).toBe(201);
    const row = await h.pool.query('SELECT tenant FROM conversations WHERE id = $1', [made.json.id]);
    expect(row.rows[0].tenant).toBe('evil');
    expectError(await h.call('GET', `/v1/conversations/${made.json.id}`, ['mallory', 'acme']), 404, 'not_found');
    expect(coordinatorCalls).toEqual([]);
  });

  it('shows nothing of another conversation after a foreign Last-Event-ID', async () => {
    const mine = await h.conversation(alice);
    const foreignSeq = await publishConv(h, foreignConv, { type: 'assistant.message', data: { runId: 'r', text: 'secret of evil' }, metadata: { at } }, `iso-secret-${mine}`);
    const mineSeq = await publishConv(h, mine, { type: 'assistant.message', data: { runId: 'r', text: 'mine' }, metadata: { at } }, `iso-mine-${mine}`);
    const token = await h.token('alice', 'acme');
    const sse = openSse(h.baseUrl, `/v1/conversations/${mine}/events`, token, { 'last-event-id': String(foreignSeq - 1) });
    expect(await sse.status).toBe(200);
    await waitFor(() => sse.events.length >= 1, 10_000, 'the event after the foreign position');
    const later = await publishConv(h, mine, { type: 'assistant.message', data: { runId: 'r', text: 'later' }, metadata: { at } }, `iso-later-${mine}`);
    await waitFor(() => sse.events.some((e) => Number(e.id) === later), 10_000, 'a live event');
    sse.close();
    expect(sse.events.map((e) => Number(e.id))).toEqual([mineSeq, later]);
    expect(sse.body()).not.toContain('secret of evil');
    // And the foreign conversation itself, with any resume point, is not found.
    expectError(await h.call('GET', `/v1/conversations/${foreignConv}/events`, alice, undefined, { 'last-event-id': String(foreignSeq - 1) }), 404, 'not_found');
  });

  it('ends a stream when its token expires mid-stream, and a ticket never outlives its token', async () => {
    const id = await h.conversation(alice);
    const shortLived = await h.token('alice', 'acme', 3);
    const byHeader = openSse(h.baseUrl, `/v1/conversations/${id}/events`, shortLived);
    const { ticket, expiresAt } = (await h.call('POST', `/v1/conversations/${id}/events/ticket`, shortLived)).json;
    expect(Date.parse(expiresAt) - Date.now()).toBeLessThanOrEqual(3_000);
    const byTicket = openSse(h.baseUrl, `/v1/conversations/${id}/events?ticket=${ticket}`, null);
    expect([await byHeader.status, await byTicket.status]).toEqual([200, 200]);
    await waitFor(() => byHeader.events.length >= 2 && byTicket.events.length >= 2, 10_000, 'the first events');
    await Promise.all([byHeader.ended, byTicket.ended]); // the server ends both, at the token's exp
    for (const s of [byHeader, byTicket]) expect(s.comments).toContain(': credential expired');
    // After expiry neither the token nor the ticket opens anything.
    await waitFor(async () => (await h.call('GET', `/v1/conversations/${id}/events`, shortLived)).status === 401, 15_000, 'the token to be refused');
    expectError(await h.call('GET', `/v1/conversations/${id}/events?ticket=${ticket}`, null), 401, 'unauthorized');
  });
});
