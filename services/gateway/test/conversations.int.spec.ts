import { decodeConversationEvent } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import { expectError, startHarness, type Harness } from './harness';

/** Conversations, members and messages, through the HTTP API and the `conversations` projection. */
describe('gateway conversations (real NATS + Postgres)', () => {
  let h: Harness;
  const alice: [string, string] = ['alice', 'acme'];
  const bob: [string, string] = ['bob', 'acme'];
  const mallory: [string, string] = ['mallory', 'evil'];
  const aliceElsewhere: [string, string] = ['alice', 'evil'];
  beforeAll(async () => {
    h = await startHarness('gwconv');
  });
  afterAll(() => h?.stop());

  const history = async (id: string) =>
    (await h.store.read(h.nats.topology.streams.CONV, h.nats.topology.conv(id), decodeConversationEvent)).events.map((e) => e.event);
  const at = '2026-01-01T00:00:00.000Z';
  const publish = (id: string, e: ConversationEvent, msgId: string) => h.store.publish(h.nats.topology.conv(id), e, msgId);

  it('creates a conversation that an immediate GET shows, with the creator as member', async () => {
    const created = await h.call('POST', '/v1/conversations', alice, { title: 'first' });
    expect(created.status).toBe(201);
    const id = created.json.id as string;
    const r = await h.call('GET', `/v1/conversations/${id}`, alice);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      id,
      title: 'first',
      members: [{ userId: 'alice', addedAt: expect.any(String) }],
      run: { status: 'idle' },
      todos: [],
      waitForTasks: [],
      epoch: 1,
      queue: [],
      approvals: [],
      questions: [],
    });
    expect((await history(id)).map((e) => e.type)).toEqual(['conversation.created', 'member.added']);
    // No body at all is a conversation without a title.
    const untitled = await h.call('POST', '/v1/conversations', alice);
    expect(untitled.status).toBe(201);
    expect((await h.call('GET', `/v1/conversations/${untitled.json.id}`, alice)).json.title).toBe('');
  });

  it('answers the same conversation for a retried create with the same Idempotency-Key', async () => {
    const a = await h.call('POST', '/v1/conversations', alice, { title: 'k' }, { 'idempotency-key': 'create-1' });
    const b = await h.call('POST', '/v1/conversations', alice, { title: 'k' }, { 'idempotency-key': 'create-1' });
    const other = await h.call('POST', '/v1/conversations', bob, { title: 'k' }, { 'idempotency-key': 'create-1' });
    expect([a.status, b.status, other.status]).toEqual([201, 201, 201]);
    expect(b.json.id).toBe(a.json.id);
    expect(other.json.id).not.toBe(a.json.id);
    expect((await history(a.json.id)).map((e) => e.type)).toEqual(['conversation.created', 'member.added']);
  });

  it('hides a conversation from other tenants and non-members (404) on every route', async () => {
    const id = await h.conversation(alice);
    const routes: [string, string, unknown][] = [
      ['GET', `/v1/conversations/${id}`, undefined],
      ['POST', `/v1/conversations/${id}/members`, { userId: 'mallory' }],
      ['POST', `/v1/conversations/${id}/messages`, { text: 'hello' }],
      ['POST', `/v1/conversations/${id}/commands`, { command: 'echo hi' }],
      ['GET', `/v1/conversations/${id}/tasks`, undefined],
      ['GET', `/v1/conversations/${id}/events`, undefined],
    ];
    for (const who of [mallory, bob, aliceElsewhere]) {
      for (const [method, path, body] of routes) expectError(await h.call(method, path, who, body), 404, 'not_found');
    }
    for (const [method, path, body] of routes) {
      const unknown = path.replace(id, 'no-such-conversation');
      expectError(await h.call(method, unknown, alice, body), 404, 'not_found');
      expectError(await h.call(method, path.replace(id, 'bad.id%20x'), alice, body), 404, 'not_found');
    }
    // Nothing was written by any of those attempts.
    expect((await history(id)).map((e) => e.type)).toEqual(['conversation.created', 'member.added']);
  });

  it('adds a member of the same tenant, who can then read; adding again changes nothing', async () => {
    const id = await h.conversation(alice);
    expectError(await h.call('GET', `/v1/conversations/${id}`, bob), 404, 'not_found');
    const added = await h.call('POST', `/v1/conversations/${id}/members`, alice, { userId: 'bob' });
    expect(added.status).toBe(204);
    expect(added.bytes.length).toBe(0);
    const seen = await h.call('GET', `/v1/conversations/${id}`, bob);
    expect(seen.status).toBe(200);
    expect(seen.json.members.map((m: { userId: string }) => m.userId).sort()).toEqual(['alice', 'bob']);
    expect((await h.call('POST', `/v1/conversations/${id}/members`, bob, { userId: 'bob' })).status).toBe(204);
    expect((await history(id)).filter((e) => e.type === 'member.added')).toHaveLength(2);
    // "bob" of another tenant is a different person: still 404 for him.
    expectError(await h.call('GET', `/v1/conversations/${id}`, ['bob', 'evil']), 404, 'not_found');
  });

  it('posts messages; a retried clientMessageId is one message with the same id', async () => {
    const id = await h.conversation(alice);
    const first = await h.call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'hello', clientMessageId: 'c-1' });
    expect(first.status).toBe(202);
    expect(first.json).toEqual({ messageId: expect.any(String), disposition: 'started' });
    const retry = await h.call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'hello', clientMessageId: 'c-1' });
    expect(retry.json.messageId).toBe(first.json.messageId);
    const plain = await h.call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'again' });
    expect(plain.json.messageId).not.toBe(first.json.messageId);
    const messages = (await history(id)).filter((e) => e.type === 'message.user');
    expect(messages.map((e) => e.data)).toEqual([
      { messageId: first.json.messageId, userId: 'alice', text: 'hello', clientMessageId: 'c-1' },
      { messageId: plain.json.messageId, userId: 'alice', text: 'again' },
    ]);
  });

  it('projects runs and todos: queued while running, started while waiting or idle', async () => {
    const id = await h.conversation(alice);
    const post = async () => (await h.call('POST', `/v1/conversations/${id}/messages`, alice, { text: 'x' })).json.disposition;
    await publish(id, { type: 'run.started', data: { runId: 'r1', userId: 'alice', trigger: 'message' }, metadata: { at } }, 'rs1');
    const todos = [{ id: 'a', content: 'build', status: 'in_progress' as const, taskIds: ['t1'] }];
    await publish(id, { type: 'todos.updated', data: { runId: 'r1', todos, waitForTasks: ['t1'] }, metadata: { at } }, 'tu1');
    const running = await waitFor(async () => {
      const r = (await h.call('GET', `/v1/conversations/${id}`, alice)).json;
      return r.run.status === 'running' && r.todos.length === 1 ? r : undefined;
    });
    expect(running).toMatchObject({ run: { status: 'running', runId: 'r1', userId: 'alice' }, todos, waitForTasks: ['t1'] });
    expect(await post()).toBe('queued');

    await publish(id, { type: 'run.finished', data: { runId: 'r1', outcome: 'waiting' }, metadata: { at } }, 'rf1');
    await waitFor(async () => (await h.call('GET', `/v1/conversations/${id}`, alice)).json.run.status === 'waiting');
    expect((await h.call('GET', `/v1/conversations/${id}`, alice)).json.run).toEqual({ status: 'waiting', runId: 'r1', userId: 'alice' });
    expect(await post()).toBe('started');

    await publish(id, { type: 'run.started', data: { runId: 'r2', userId: 'bob', trigger: 'task_event', taskId: 't1' }, metadata: { at } }, 'rs2');
    await publish(id, { type: 'run.finished', data: { runId: 'r2', outcome: 'completed' }, metadata: { at } }, 'rf2');
    await waitFor(async () => (await h.call('GET', `/v1/conversations/${id}`, alice)).json.run.status === 'idle');
    expect((await h.call('GET', `/v1/conversations/${id}`, alice)).json.run).toEqual({ status: 'idle' });
    expect(await post()).toBe('started');
  });

  it('shows the unconsumed inbox messages and wake-ups as the queue', async () => {
    const id = await h.conversation(alice);
    await h.pool.query(
      `INSERT INTO inbox (conversation_id, seq, kind, user_id, payload, consumed_by_run) VALUES
       ($1, 10, 'message', 'alice', '{}', 'r0'), ($1, 11, 'message', 'bob', '{}', NULL)`,
      [id],
    );
    await h.pool.query(
      `INSERT INTO wakeups (conversation_id, task_id, attempt, user_id, payload, consumed_at) VALUES
       ($1, 'ta', 1, 'alice', '{}', NULL), ($1, 'tb', 1, 'alice', '{}', now())`,
      [id],
    );
    expect((await h.call('GET', `/v1/conversations/${id}`, alice)).json.queue).toEqual([
      { kind: 'message', userId: 'bob' },
      { kind: 'task_event', taskId: 'ta', userId: 'alice' },
    ]);
  });
});
