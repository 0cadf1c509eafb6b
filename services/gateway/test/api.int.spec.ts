import { decodeConversationEvent } from '@handplane/contracts';
import { createLogger } from '@handplane/platform';
import type { ConversationEvent } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import { insertTask, projected, publishConv, stopAllResponder, stopTaskResponder } from './doubles';
import { expectError, startHarness, type Harness } from './harness';
import { openSse } from './sse-client';
import { startGateway } from '../src/service';

/** The routes of issue 7: registry, stops, approvals, questions, audit, tickets, OpenAPI, rate limits. */
describe('gateway API contract (real NATS + Postgres)', () => {
  let h: Harness;
  const alice: [string, string] = ['alice', 'acme'];
  const bob: [string, string] = ['bob', 'acme'];
  const at = '2026-01-01T00:00:00.000Z';
  beforeAll(async () => {
    h = await startHarness('gwapi', {}, { projectionWaitMs: 3000, rpcTimeoutMs: 1500 });
  });
  afterAll(() => h?.stop());

  const history = async (id: string) => (await h.store.read(h.nats.topology.streams.CONV, h.nats.topology.conv(id), decodeConversationEvent)).events.map((e) => e.event);

  describe('GET /v1/tasks (the registry)', () => {
    it('lists the tasks of every conversation the caller is in, newest first, filtered by status and conversation', async () => {
      const c1 = await h.conversation(alice);
      const c2 = await h.conversation(alice);
      const notMine = await h.conversation(bob);
      const t1 = await insertTask(h, { conversationId: c1, tenant: 'acme', userId: 'alice', status: 'running' });
      const t2 = await insertTask(h, { conversationId: c2, tenant: 'acme', userId: 'alice', status: 'succeeded' });
      const t3 = await insertTask(h, { conversationId: c1, tenant: 'acme', userId: 'alice', status: 'stopping' });
      await insertTask(h, { conversationId: notMine, tenant: 'acme', userId: 'bob' });
      const ids = async (q = '') => {
        const r = await h.call('GET', `/v1/tasks${q}`, alice);
        expect(r.status).toBe(200);
        return (r.json as { taskId: string }[]).map((t) => t.taskId);
      };
      expect(await ids()).toEqual([t3, t2, t1]);
      expect(await ids('?status=running')).toEqual([t1]);
      expect(await ids('?status=active')).toEqual([t3, t1]);
      expect(await ids('?status=finished')).toEqual([t2]);
      expect(await ids('?status=running,succeeded')).toEqual([t2, t1]);
      expect(await ids(`?conversation=${c1}`)).toEqual([t3, t1]);
      expect(await ids(`?conversation=${notMine}`)).toEqual([]);
      expect(await ids('?conversation=no.such')).toEqual([]);
      expect(await ids('?limit=1')).toEqual([t3]);
      const full = (await h.call('GET', `/v1/tasks?conversation=${c2}`, alice)).json[0];
      expect(Object.keys(full).sort()).toEqual(
        ['taskId', 'commandId', 'conversationId', 'userId', 'command', 'status', 'background', 'attempt', 'epoch', 'exitCode', 'signal', 'resultState', 'outputBytes', 'createdAt', 'startedAt', 'finishedAt', 'deadlineAt', 'receipt', 'awaitingInput'].sort(),
      );
    });

    it('refuses unknown statuses and bad limits with 422', async () => {
      for (const q of ['?status=bogus', '?status=running,nope', '?limit=0', '?limit=5000', '?limit=x', '?status=a&status=b']) expectError(await h.call('GET', `/v1/tasks${q}`, alice), 422, 'validation');
    });
  });

  describe('POST /v1/tasks/:taskId/stop', () => {
    it('asks the coordinator for this caller and tenant and answers 202 {status, attempt}', async () => {
      const conv = await h.conversation(alice);
      const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
      const c = stopTaskResponder(h, () => ({ ok: true, status: 'stopping', attempt: 1 }));
      try {
        const r = await h.call('POST', `/v1/tasks/${taskId}/stop`, alice, { attempt: 1 });
        expect([r.status, r.json]).toEqual([202, { status: 'stopping', attempt: 1 }]);
        expect((await h.call('POST', `/v1/tasks/${taskId}/stop`, alice)).status).toBe(202); // no body: the current attempt
        expect(c.seen).toEqual([
          { tenant: 'acme', userId: 'alice', taskId, attempt: 1, reason: 'user' },
          { tenant: 'acme', userId: 'alice', taskId, reason: 'user' },
        ]);
      } finally {
        c.stop();
      }
    });

    it('maps a stale attempt to 409, bad bodies to 422, unknown tasks to 404 and no coordinator to 503', async () => {
      const conv = await h.conversation(alice);
      const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
      expectError(await h.call('POST', `/v1/tasks/${taskId}/stop`, alice, {}), 503, 'unavailable');
      const c = stopTaskResponder(h, (req) => (req.attempt === 1 ? { ok: true, status: 'stopping', attempt: 1 } : { ok: false, error: { code: 'conflict', message: 'stale attempt' } }));
      try {
        expectError(await h.call('POST', `/v1/tasks/${taskId}/stop`, alice, { attempt: 7 }), 409, 'conflict');
        for (const body of [{ attempt: -1 }, { attempt: 'x' }, { attempt: 1, extra: true }]) expectError(await h.call('POST', `/v1/tasks/${taskId}/stop`, alice, body), 422, 'validation');
        expectError(await h.call('POST', '/v1/tasks/nope/stop', alice, {}), 404, 'not_found');
        expect(c.seen.map((s) => s.attempt)).toEqual([7]); // nothing else reached the coordinator
      } finally {
        c.stop();
      }
    });
  });

  describe('POST /v1/conversations/:id/stop-all', () => {
    it('ends the epoch the caller saw, answers 202 {epoch, stopping} and the conversation shows the new epoch', async () => {
      const conv = await h.conversation(alice);
      const c = stopAllResponder(h, ['t-a', 't-b']);
      try {
        const r = await h.call('POST', `/v1/conversations/${conv}/stop-all`, alice);
        expect([r.status, r.json]).toEqual([202, { epoch: 2, stopping: ['t-a', 't-b'] }]);
        expect(c.seen).toEqual([{ tenant: 'acme', userId: 'alice', conversationId: conv, epoch: 1 }]);
        expect((await h.call('GET', `/v1/conversations/${conv}`, alice)).json.epoch).toBe(2);
        expect((await h.call('POST', `/v1/conversations/${conv}/stop-all`, alice, {})).json.epoch).toBe(3);
        expect(c.seen[1]!.epoch).toBe(2);
      } finally {
        c.stop();
      }
      expectError(await h.call('POST', `/v1/conversations/${conv}/stop-all`, alice, { epoch: 'x' }), 422, 'validation');
      expectError(await h.call('POST', `/v1/conversations/${conv}/stop-all`, alice), 503, 'unavailable');
    });
  });

  describe('approvals and questions', () => {
    const ask = async (conv: string, approvalId: string, questionId: string) => {
      const events: [ConversationEvent, string][] = [
        [{ type: 'approval.requested', data: { approvalId, runId: 'r1', command: 'rm -rf build', reason: 'deletes files' }, metadata: { at } }, `ar:${approvalId}`],
        [{ type: 'question.asked', data: { questionId, runId: 'r1', text: 'Which branch?' }, metadata: { at } }, `qa:${questionId}`],
      ];
      let seq = 0;
      for (const [e, id] of events) seq = await publishConv(h, conv, e, id);
      await projected(h, seq);
    };

    it('shows pending ones in the conversation and records a human resolution exactly once (204, then 409)', async () => {
      const conv = await h.conversation(alice);
      await h.call('POST', `/v1/conversations/${conv}/members`, alice, { userId: 'bob' });
      await ask(conv, 'ap-1', 'q-1');
      const view = (await h.call('GET', `/v1/conversations/${conv}`, alice)).json;
      expect(view.approvals).toEqual([{ approvalId: 'ap-1', runId: 'r1', command: 'rm -rf build', reason: 'deletes files', requestedAt: at }]);
      expect(view.questions).toEqual([{ questionId: 'q-1', runId: 'r1', text: 'Which branch?', askedAt: at }]);

      const approve = await h.call('POST', `/v1/conversations/${conv}/approvals/ap-1`, bob, { decision: 'reject' });
      expect([approve.status, approve.bytes.length]).toEqual([204, 0]);
      expectError(await h.call('POST', `/v1/conversations/${conv}/approvals/ap-1`, alice, { decision: 'approve' }), 409, 'conflict');
      const answer = await h.call('POST', `/v1/conversations/${conv}/questions/q-1/answer`, alice, { text: 'main' });
      expect(answer.status).toBe(204);
      expectError(await h.call('POST', `/v1/conversations/${conv}/questions/q-1/answer`, alice, { text: 'dev' }), 409, 'conflict');

      const after = (await h.call('GET', `/v1/conversations/${conv}`, alice)).json;
      expect([after.approvals, after.questions]).toEqual([[], []]);
      const written = (await history(conv)).filter((e) => e.type === 'approval.resolved' || e.type === 'question.answered');
      expect(written.map((e) => [e.type, e.data, e.metadata.actor])).toEqual([
        ['approval.resolved', { approvalId: 'ap-1', decision: 'reject', by: 'bob', automated: false }, 'bob'],
        ['question.answered', { questionId: 'q-1', text: 'main', by: 'alice' }, 'alice'],
      ]);
    });

    it('accepts an answer to a question seen on the stream before the read model applied it', async () => {
      const conv = await h.conversation(alice);
      // No wait for the projection: a client may act on the SSE event at once.
      await publishConv(h, conv, { type: 'question.asked', data: { questionId: 'q-fast', runId: 'r1', text: 'now?' }, metadata: { at } }, `qf:${conv}`);
      expect((await h.call('POST', `/v1/conversations/${conv}/questions/q-fast/answer`, alice, { text: 'yes' })).status).toBe(204);
      await publishConv(h, conv, { type: 'approval.requested', data: { approvalId: 'ap-fast', runId: 'r1', command: 'x', reason: 'y' }, metadata: { at } }, `af:${conv}`);
      expect((await h.call('POST', `/v1/conversations/${conv}/approvals/ap-fast`, alice, { decision: 'approve' })).status).toBe(204);
    });

    it('answers 404 for unknown ids or ids of another conversation, and 422 for bad bodies', async () => {
      const conv = await h.conversation(alice);
      const other = await h.conversation(alice);
      await ask(other, 'ap-x', 'q-x');
      await ask(conv, 'ap-2', 'q-2');
      expectError(await h.call('POST', `/v1/conversations/${conv}/approvals/nope`, alice, { decision: 'approve' }), 404, 'not_found');
      expectError(await h.call('POST', `/v1/conversations/${conv}/approvals/ap-x`, alice, { decision: 'approve' }), 404, 'not_found');
      expectError(await h.call('POST', `/v1/conversations/${conv}/approvals/q-2`, alice, { decision: 'approve' }), 404, 'not_found'); // a question is not an approval
      expectError(await h.call('POST', `/v1/conversations/${conv}/questions/q-x/answer`, alice, { text: 'x' }), 404, 'not_found');
      for (const body of [{}, { decision: 'maybe' }, { decision: 'approve', by: 'mallory' }]) expectError(await h.call('POST', `/v1/conversations/${conv}/approvals/ap-2`, alice, body), 422, 'validation');
      for (const body of [{}, { text: '  ' }, { text: 5 }]) expectError(await h.call('POST', `/v1/conversations/${conv}/questions/q-2/answer`, alice, body), 422, 'validation');
      expect((await history(conv)).some((e) => e.type === 'approval.resolved' || e.type === 'question.answered')).toBe(false);
    });
  });

  describe('GET /v1/conversations/:id/audit', () => {
    it('returns the log in order with time, type, actor and data, in pages', async () => {
      const conv = await h.conversation(alice);
      await h.call('POST', `/v1/conversations/${conv}/messages`, alice, { text: 'hello' });
      await publishConv(h, conv, { type: 'assistant.message', data: { runId: 'r1', text: 'hi' }, metadata: { at } }, `am:${conv}`);
      const r = await h.call('GET', `/v1/conversations/${conv}/audit`, alice);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-next-after')).toBeNull();
      const entries = r.json as { seq: number; time: string; type: string; actor: string | null; data: unknown }[];
      expect(entries.map((e) => [e.type, e.actor])).toEqual([
        ['conversation.created', 'alice'],
        ['member.added', 'alice'],
        ['message.user', 'alice'],
        ['assistant.message', null],
      ]);
      expect(entries[2]!.data).toMatchObject({ userId: 'alice', text: 'hello' });
      expect(entries.map((e) => e.seq)).toEqual([...entries.map((e) => e.seq)].sort((a, b) => a - b));
      for (const e of entries) expect(Number.isNaN(Date.parse(e.time))).toBe(false);

      const page = await h.call('GET', `/v1/conversations/${conv}/audit?limit=2`, alice);
      expect((page.json as unknown[]).length).toBe(2);
      const next = page.headers.get('x-next-after')!;
      expect(Number(next)).toBe(entries[1]!.seq);
      const rest = await h.call('GET', `/v1/conversations/${conv}/audit?after=${next}`, alice);
      expect((rest.json as { seq: number }[]).map((e) => e.seq)).toEqual(entries.slice(2).map((e) => e.seq));
      expect((await h.call('GET', `/v1/conversations/${conv}/audit?after=${entries[3]!.seq}`, alice)).json).toEqual([]);
      for (const q of ['?limit=0', '?limit=x', '?after=-1']) expectError(await h.call('GET', `/v1/conversations/${conv}/audit${q}`, alice), 422, 'validation');
    });
  });

  describe('audit of task events and versions', () => {
    const raw = (type: string, v: number, data: unknown, actor?: string) => Buffer.from(JSON.stringify({ type, v, data, metadata: { at, ...(actor ? { actor } : {}) } }));

    it('replays a task’s own events with who and when, upcasts a v1 event on read and leaves the log as written', async () => {
      const t = h.nats.topology;
      const js = h.nats.nats.js;
      const conv = await h.conversation(alice);
      const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
      const commandId = `cmd-${taskId}`;
      const reg = {
        taskId, commandId, conversationId: conv, tenant: 'acme', userId: 'alice', origin: 'user', command: 'make test', cwd: '.', env: {},
        epoch: 1, attempt: 1, foregroundWindowMs: 60000, timeoutMs: 3600000, registeredAt: at,
      };
      await js.publish(t.task(taskId), raw('TaskRegistered', 1, reg, 'alice'));
      await js.publish(t.task(taskId), raw('TaskStarted', 1, { taskId, commandId, attempt: 1, runnerId: 'r1', startedAt: at }));
      await js.publish(t.task(taskId), raw('TaskStopRequested', 1, { taskId, commandId, attempt: 1, epoch: 1, reason: 'user', requestedBy: 'bob', requestedAt: at }, 'bob'));
      await js.publish(t.cmd(commandId), raw('CommandExited', 1, { commandId, taskId, attempt: 1, runnerId: 'r1', exitCode: null, signal: 'SIGTERM', endOffset: 3, startedAt: at, finishedAt: at, reason: 'stopped' }));
      // The conversation's notice of that stop, once as first published (v1) and once as written today (v2).
      const v1 = raw('task.stopping', 1, { taskId, commandId, reason: 'user' }, 'bob');
      const v1Seq = (await js.publish(t.conv(conv), v1)).seq;
      await js.publish(t.conv(conv), raw('task.stopping', 2, { taskId, commandId, attempt: 1, reason: 'user', requestedBy: 'bob' }, 'bob'));

      const mine = await h.call('GET', `/v1/tasks/${taskId}/audit`, alice);
      expect(mine.status).toBe(200);
      const entries = mine.json as { source: string; type: string; v: number; actor: string | null; data: Record<string, unknown> }[];
      expect(entries.map((e) => [e.source, e.type, e.actor])).toEqual([
        ['task', 'TaskRegistered', 'alice'],
        ['task', 'TaskStarted', null],
        ['task', 'TaskStopRequested', 'bob'],
        ['task', 'CommandExited', null],
      ]);
      expect(entries[2]!.data).toMatchObject({ requestedBy: 'bob', reason: 'user' });

      const audit = (await h.call('GET', `/v1/conversations/${conv}/audit`, alice)).json as { type: string; v: number; data: Record<string, unknown> }[];
      const stops = audit.filter((e) => e.type === 'task.stopping');
      expect(stops.map((e) => [e.v, e.data])).toEqual([
        [1, { taskId, commandId, attempt: null, reason: 'user', requestedBy: 'bob' }],
        [2, { taskId, commandId, attempt: 1, reason: 'user', requestedBy: 'bob' }],
      ]);
      // Never rewritten: the stored message is byte for byte what was published.
      const stored = await h.nats.nats.jsm.streams.getMessage(t.streams.CONV, { seq: v1Seq });
      expect(Buffer.from(stored!.data).equals(v1)).toBe(true);

      const merged = (await h.call('GET', `/v1/conversations/${conv}/audit?include=tasks`, alice)).json as { source: string; type: string }[];
      expect(merged.filter((e) => e.source === 'task').map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStarted', 'TaskStopRequested', 'CommandExited']);
      expect(merged.filter((e) => e.source === 'conversation').length).toBe(audit.length);
      expectError(await h.call('GET', `/v1/conversations/${conv}/audit?include=everything`, alice), 422, 'validation');
      expectError(await h.call('GET', `/v1/tasks/${taskId}/audit`, bob), 404, 'not_found');
      expectError(await h.call('GET', `/v1/tasks/${taskId}/audit`, ['alice', 'evil']), 404, 'not_found');
    });
  });

  describe('event-stream tickets', () => {
    it('issues a 60 s ticket that opens this conversation’s stream without a header', async () => {
      const conv = await h.conversation(alice);
      const r = await h.call('POST', `/v1/conversations/${conv}/events/ticket`, alice);
      expect(r.status).toBe(201);
      const expiresIn = Date.parse(r.json.expiresAt) - Date.now();
      expect(expiresIn).toBeGreaterThan(50_000);
      expect(expiresIn).toBeLessThanOrEqual(61_000);
      const sse = openSse(h.baseUrl, `/v1/conversations/${conv}/events?ticket=${encodeURIComponent(r.json.ticket)}`, null);
      expect(await sse.status).toBe(200);
      await waitFor(() => sse.events.length >= 2, 10_000, 'the first events');
      sse.close();
      expect(sse.events.map((e) => e.event)).toEqual(['conversation.created', 'member.added']);
    });

    it('refuses a ticket for another conversation, a ticket used as a bearer token, and tokens in the URL', async () => {
      const conv = await h.conversation(alice);
      const other = await h.conversation(alice);
      const { ticket } = (await h.call('POST', `/v1/conversations/${conv}/events/ticket`, alice)).json;
      expectError(await h.call('GET', `/v1/conversations/${other}/events?ticket=${ticket}`, null), 401, 'unauthorized');
      expectError(await h.call('GET', `/v1/conversations/${conv}`, ticket), 401, 'unauthorized');
      expectError(await h.call('GET', `/v1/conversations/${conv}/events`, ticket), 401, 'unauthorized');
      expectError(await h.call('GET', `/v1/conversations/${conv}/events?ticket=garbage`, null), 401, 'unauthorized');
      expectError(await h.call('GET', `/v1/conversations/${conv}/events?ticket=`, null), 401, 'unauthorized');
      const token = await h.token('alice', 'acme');
      for (const p of ['access_token', 'token']) expectError(await h.call('GET', `/v1/conversations/${conv}/events?${p}=${token}`, null), 401, 'unauthorized');
      expectError(await h.call('GET', `/v1/conversations/${conv}/events?ticket=${token}`, null), 401, 'unauthorized');
      // A ticket of someone who is not (or no longer) a member opens nothing.
      expectError(await h.call('POST', `/v1/conversations/${conv}/events/ticket`, bob), 404, 'not_found');
    });
  });

  it('serves its OpenAPI description without a token', async () => {
    const r = await h.call('GET', '/openapi.json', null);
    expect(r.status).toBe(200);
    expect(r.json.openapi).toBe('3.1.0');
    expect(Object.keys(r.json.paths)).toEqual(expect.arrayContaining(['/v1/tasks', '/v1/conversations/{id}/audit', '/v1/conversations/{id}/events/ticket']));
  });

  it('answers 401 on every API route without a token', async () => {
    const routes: [string, string][] = [
      ['GET', '/v1/tasks'],
      ['POST', '/v1/tasks/t1/stop'],
      ['POST', '/v1/conversations/c1/stop-all'],
      ['POST', '/v1/conversations/c1/approvals/a1'],
      ['POST', '/v1/conversations/c1/questions/q1/answer'],
      ['GET', '/v1/conversations/c1/audit'],
      ['POST', '/v1/conversations/c1/events/ticket'],
    ];
    for (const [method, path] of routes) expectError(await h.call(method, path, null, method === 'POST' ? {} : undefined), 401, 'unauthorized');
  });
});

describe('gateway rate limits (real NATS + Postgres)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('gwrate', { RATE_LIMIT_PER_MINUTE: '6', RATE_LIMIT_BURST: '3' });
  });
  afterAll(() => h?.stop());

  it('answers 429 with Retry-After once a user’s burst is spent, per tenant and user', async () => {
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await h.call('GET', '/v1/tasks', ['alice', 'acme'])).status);
    expect(codes).toEqual([200, 200, 200, 429]);
    const limited = await h.call('GET', '/v1/tasks', ['alice', 'acme']);
    expectError(limited, 429, 'rate_limited');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(10); // 6 per minute: one every 10 s
    // Another user, or the same name in another tenant, has a budget of its own.
    expect((await h.call('GET', '/v1/tasks', ['bob', 'acme'])).status).toBe(200);
    expect((await h.call('GET', '/v1/tasks', ['alice', 'evil'])).status).toBe(200);
    // Health checks and the API description are not limited.
    expect((await h.call('GET', '/healthz', null)).status).toBe(200);
  });

  it('shares one budget per user across gateway replicas (RATE_LIMIT_STORE=postgres, the default)', async () => {
    const second = await startGateway(h.config, { logger: createLogger('gateway-test', 'silent'), host: '127.0.0.1' });
    try {
      const token = await h.token('carol', 'acme');
      const urls = [h.baseUrl, `http://127.0.0.1:${second.httpPort}`];
      // Six concurrent requests, three to each replica: the shared burst of 3 lets exactly three through.
      const codes = await Promise.all(Array.from({ length: 6 }, (_, i) => fetch(`${urls[i % 2]}/v1/tasks`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status)));
      expect(codes.filter((c) => c === 200)).toHaveLength(3);
      expect(codes.filter((c) => c === 429)).toHaveLength(3);
    } finally {
      await second.stop();
    }
  });

  it('keeps a budget per instance with RATE_LIMIT_STORE=memory', async () => {
    const config = { ...h.config, RATE_LIMIT_STORE: 'memory' as const };
    const [a, b] = [await startGateway(config, { logger: createLogger('gateway-test', 'silent'), host: '127.0.0.1' }), await startGateway(config, { logger: createLogger('gateway-test', 'silent'), host: '127.0.0.1' })];
    try {
      const token = await h.token('dave', 'acme');
      const codes: number[] = [];
      for (let i = 0; i < 8; i++) codes.push((await fetch(`http://127.0.0.1:${(i % 2 ? b : a).httpPort}/v1/tasks`, { headers: { authorization: `Bearer ${token}` } })).status);
      expect(codes).toEqual([200, 200, 200, 200, 200, 200, 429, 429]);
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
