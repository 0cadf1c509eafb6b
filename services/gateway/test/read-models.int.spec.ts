import { headers as natsHeaders } from '@nats-io/transport-node';
import type { ConversationEvent, SandboxCommandEvent } from '@handplane/domain';
import { waitForProjection } from '@handplane/platform';
import { insertTask } from './doubles';
import { expectError, startHarness, type Harness } from './harness';

/**
 * The read models the gateway's projectors build (`runs`, `todos`, `conversation_queue`, `commands`,
 * `command_log_index`), filled from real CONV, TASKS and LOGS messages and read through the API.
 */
describe('gateway read models (real NATS + Postgres)', () => {
  let h: Harness;
  const alice: [string, string] = ['alice', 'acme'];
  const bob: [string, string] = ['bob', 'acme'];
  const mallory: [string, string] = ['mallory', 'evil'];
  const aliceElsewhere: [string, string] = ['alice', 'evil'];
  const at = (minute: number) => `2026-01-01T00:${String(minute).padStart(2, '0')}:00.000Z`;
  // An offset and byte count past 2^32: bigints must come back as exact numbers.
  const BIG = 5_000_000_123;

  let conv: string;
  let taskA: string;
  let taskB: string;
  const seqs: Record<string, number> = {};

  const conversationEvent = async (id: string, key: string, e: ConversationEvent) => {
    seqs[key] = (await h.store.publish(h.nats.topology.conv(id), e, `${id}:${key}`)).seq;
    return seqs[key]!;
  };
  const commandEvent = async (commandId: string, key: string, e: SandboxCommandEvent) => (await h.store.publish(h.nats.topology.cmd(commandId), e, `${commandId}:${key}`)).seq;
  // What the ingestor writes to LOGS: chunks at their offsets, the truncation marker, the exit record.
  const logMessage = async (commandId: string, offset: number, kind: 'stdout' | 'stderr' | 'truncated' | 'exit', data: Buffer, extra: Record<string, unknown> = {}) => {
    const hd = natsHeaders();
    hd.set('Hp-Offset', String(offset));
    if (kind === 'stdout' || kind === 'stderr') hd.set('Hp-Stream', kind);
    if (kind === 'truncated') hd.set('Hp-Truncated', JSON.stringify(extra));
    if (kind === 'exit') hd.set('Hp-Exit', JSON.stringify({ exitCode: 0, signal: null, endOffset: offset, startedAt: at(1), finishedAt: at(2), reason: 'exited' }));
    return (await h.nats.nats.js.publish(h.nats.topology.log(commandId), data, { msgID: `${commandId}:${kind}:${offset}`, headers: hd })).seq;
  };
  const projected = async (name: string, seq: number) => expect(await waitForProjection(h.pool, name, seq, 15_000)).toBe(true);

  beforeAll(async () => {
    h = await startHarness('gwreadm');
    conv = await h.conversation(alice);
    const ev = (key: string, e: ConversationEvent) => conversationEvent(conv, key, e);
    await ev('m1', { type: 'message.user', data: { messageId: 'm1', userId: 'alice', text: 'build it' }, metadata: { at: at(1) } });
    await ev('r1', { type: 'run.started', data: { runId: 'r1', userId: 'alice', trigger: 'message', messageId: 'm1' }, metadata: { at: at(2) } });
    const firstTodos = [
      { id: 'a', content: 'build', status: 'in_progress' as const, taskIds: ['t1'] },
      { id: 'b', content: 'test', status: 'pending' as const, taskIds: [] },
    ];
    await ev('todos1', { type: 'todos.updated', data: { runId: 'r1', todos: firstTodos, waitForTasks: ['t1'] }, metadata: { at: at(3) } });
    await ev('r1-end', { type: 'run.finished', data: { runId: 'r1', outcome: 'waiting' }, metadata: { at: at(4) } });
    await ev('q1', { type: 'question.answered', data: { questionId: 'q1', text: 'yes', by: 'alice' }, metadata: { at: at(5) } });
    await ev('r2', { type: 'run.started', data: { runId: 'r2', userId: 'alice', trigger: 'answer', questionId: 'q1' }, metadata: { at: at(6) } });
    await ev('r2-end', { type: 'run.finished', data: { runId: 'r2', outcome: 'failed', detail: 'model unavailable' }, metadata: { at: at(7) } });
    const done = { taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', origin: 'user' as const, status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 3 };
    await ev('t1', { type: 'task.internal_event', data: done, metadata: { at: at(8) } });
    await ev('r3', { type: 'run.started', data: { runId: 'r3', userId: 'alice', trigger: 'task_event', taskId: 't1' }, metadata: { at: at(9) } });
    // Replaces the list: new order, no wait.
    const secondTodos = [
      { id: 'b', content: 'test', status: 'in_progress' as const, taskIds: ['t2'] },
      { id: 'a', content: 'build', status: 'completed' as const, taskIds: ['t1'] },
    ];
    await ev('todos2', { type: 'todos.updated', data: { runId: 'r3', todos: secondTodos, waitForTasks: [] }, metadata: { at: at(10) } });
    await ev('m2', { type: 'message.user', data: { messageId: 'm2', userId: 'alice', text: 'also lint' }, metadata: { at: at(11) } });
    await ev('ap1', { type: 'approval.resolved', data: { approvalId: 'ap1', decision: 'approve', by: 'alice', automated: false }, metadata: { at: at(12) } });
    // The policy's own decision is never queued.
    const last = await ev('ap2', { type: 'approval.resolved', data: { approvalId: 'ap2', decision: 'approve', by: 'policy', automated: true }, metadata: { at: at(13) } });

    taskA = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    taskB = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    const a1 = `cmd-${taskA}`;
    const a2 = `cmd-${taskA}-2`;
    const ids = (commandId: string, taskId: string, attempt: number) => ({ commandId, taskId, attempt });
    // The second attempt is logged first: the answer is ordered by attempt, not by arrival.
    await commandEvent(a2, 'exit', {
      type: 'CommandExited',
      data: { ...ids(a2, taskA, 2), runnerId: 'runner-2', exitCode: 0, signal: null, endOffset: BIG, startedAt: at(20), finishedAt: at(21), reason: 'exited' },
      metadata: { at: at(21) },
    });
    await commandEvent(a2, 'readable', { type: 'CommandResultReadable', data: { ...ids(a2, taskA, 2), outputBytes: BIG }, metadata: { at: at(21) } });
    await commandEvent(a2, 'delivered', { type: 'CommandResultDelivered', data: { ...ids(a2, taskA, 2), deliveredTo: 'agent' }, metadata: { at: at(22) } });
    await commandEvent(a1, 'exit', {
      type: 'CommandExited',
      data: { ...ids(a1, taskA, 1), runnerId: 'runner-1', exitCode: null, signal: 'SIGKILL', endOffset: 22, startedAt: at(14), finishedAt: at(15), reason: 'lost' },
      metadata: { at: at(15) },
    });
    await commandEvent(a1, 'unavailable', {
      type: 'CommandResultUnavailable',
      data: { ...ids(a1, taskA, 1), durableBytes: 14, reason: 'runner lost', truncation: { droppedFrom: 12, droppedTo: 20, droppedBytes: 8 } },
      metadata: { at: at(15) },
    });
    const lastCmd = await commandEvent(`cmd-${taskB}`, 'exit', {
      type: 'CommandExited',
      data: { ...ids(`cmd-${taskB}`, taskB, 1), runnerId: 'runner-1', exitCode: 0, signal: null, endOffset: 0, startedAt: at(16), finishedAt: at(16), reason: 'exited' },
      metadata: { at: at(16) },
    });

    await logMessage(a1, 0, 'stdout', Buffer.from('hello'));
    await logMessage(a1, 5, 'stderr', Buffer.from('err'));
    await logMessage(a1, 8, 'stdout', Buffer.from('more'));
    await logMessage(a1, 12, 'truncated', Buffer.alloc(0), { droppedFrom: 12, droppedTo: 20, droppedBytes: 8 });
    await logMessage(a1, 20, 'stdout', Buffer.from('ok'));
    await logMessage(a1, 22, 'exit', Buffer.alloc(0));
    // Attempt 2: a marker and the exit record at one offset (the key allows one row per kind there).
    await logMessage(a2, 0, 'stdout', Buffer.from('four'));
    await logMessage(a2, 4, 'truncated', Buffer.alloc(0), { droppedFrom: 4, droppedTo: 4, droppedBytes: 0 });
    await logMessage(a2, 4, 'exit', Buffer.alloc(0));
    const lastLog = await logMessage(`cmd-${taskB}`, 0, 'exit', Buffer.alloc(0));

    for (const name of ['runs', 'todos', 'queues']) await projected(name, last);
    await projected('commands', lastCmd);
    await projected('command-log-index', lastLog);
  }, 60_000);
  afterAll(() => h?.stop());

  const get = (path: string, as: [string, string] = alice) => h.call('GET', path, as);

  describe('GET /v1/conversations/:id/runs', () => {
    const r1 = { runId: 'r1', userId: 'alice', trigger: 'message', triggerRef: 'm1', status: 'waiting', detail: null, startedAt: at(2), finishedAt: at(4) };
    const r2 = { runId: 'r2', userId: 'alice', trigger: 'answer', triggerRef: 'q1', status: 'failed', detail: 'model unavailable', startedAt: at(6), finishedAt: at(7) };
    const r3 = { runId: 'r3', userId: 'alice', trigger: 'task_event', triggerRef: 't1', status: 'running', detail: null, startedAt: at(9), finishedAt: null };

    it('lists the runs oldest first, in the public shape', async () => {
      const r = await get(`/v1/conversations/${conv}/runs`);
      expect(r.status).toBe(200);
      expect(r.json).toEqual([r1, r2, r3]);
      expect(r.headers.get('x-next-after')).toBeNull();
      // A conversation without runs has an empty list.
      expect((await get(`/v1/conversations/${await h.conversation(alice)}/runs`)).json).toEqual([]);
    });

    it('pages by started_seq with X-Next-After only while more follow', async () => {
      const first = await get(`/v1/conversations/${conv}/runs?limit=2`);
      expect(first.json).toEqual([r1, r2]);
      expect(first.headers.get('x-next-after')).toBe(String(seqs.r2));
      const rest = await get(`/v1/conversations/${conv}/runs?after=${first.headers.get('x-next-after')}&limit=2`);
      expect(rest.json).toEqual([r3]);
      expect(rest.headers.get('x-next-after')).toBeNull();
      // A full page that happens to end with the last run says nothing more follows.
      const exact = await get(`/v1/conversations/${conv}/runs?limit=3`);
      expect(exact.json).toEqual([r1, r2, r3]);
      expect(exact.headers.get('x-next-after')).toBeNull();
      expect((await get(`/v1/conversations/${conv}/runs?after=${seqs.r1}`)).json).toEqual([r2, r3]);
      expect((await get(`/v1/conversations/${conv}/runs?after=${seqs.r3}`)).json).toEqual([]);
      expect((await get(`/v1/conversations/${conv}/runs?limit=1000`)).status).toBe(200);
    });

    it('refuses bad paging values with 422', async () => {
      for (const q of ['limit=0', 'limit=1001', 'limit=x', 'limit=1.5', 'after=-1', 'after=x', 'limit=1&limit=2']) {
        const r = await get(`/v1/conversations/${conv}/runs?${q}`);
        expectError(r, 422, 'validation');
        expect(r.json.error.message).toMatch(/after|limit/);
      }
    });
  });

  it('GET /v1/conversations/:id/todos: the current list in its order', async () => {
    const r = await get(`/v1/conversations/${conv}/todos`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual([
      { id: 'b', content: 'test', status: 'in_progress', taskIds: ['t2'], waitedOn: false, runId: 'r3' },
      { id: 'a', content: 'build', status: 'completed', taskIds: ['t1'], waitedOn: false, runId: 'r3' },
    ]);
  });

  describe('GET /v1/conversations/:id/queue', () => {
    const item = (key: string, kind: string, itemId: string, minute: number, started: string | null) => ({
      seq: seqs[key],
      kind,
      itemId,
      userId: 'alice',
      queuedAt: at(minute),
      startedRunId: started,
      startedSeq: started ? seqs[started] : null,
    });

    it('lists every queued item by sequence with the run it started; pending=true keeps the unstarted ones', async () => {
      const all = [item('m1', 'message', 'm1', 1, 'r1'), item('q1', 'answer', 'q1', 5, 'r2'), item('t1', 'task_event', 't1:1', 8, 'r3'), item('m2', 'message', 'm2', 11, null), item('ap1', 'approval', 'ap1', 12, null)];
      const r = await get(`/v1/conversations/${conv}/queue`);
      expect(r.status).toBe(200);
      expect(r.json).toEqual(all);
      expect((await get(`/v1/conversations/${conv}/queue?pending=false`)).json).toEqual(all);
      expect((await get(`/v1/conversations/${conv}/queue?pending=true`)).json).toEqual(all.slice(3));
      expect(r.headers.get('x-next-after')).toBeNull();
    });

    it('pages by sequence: X-Next-After while more follow, the next page from there, pending pages too', async () => {
      const all = [item('m1', 'message', 'm1', 1, 'r1'), item('q1', 'answer', 'q1', 5, 'r2'), item('t1', 'task_event', 't1:1', 8, 'r3'), item('m2', 'message', 'm2', 11, null), item('ap1', 'approval', 'ap1', 12, null)];
      const first = await get(`/v1/conversations/${conv}/queue?limit=2`);
      expect(first.json).toEqual(all.slice(0, 2));
      expect(first.headers.get('x-next-after')).toBe(String(all[1]!.seq));
      const second = await get(`/v1/conversations/${conv}/queue?limit=2&after=${first.headers.get('x-next-after')}`);
      expect(second.json).toEqual(all.slice(2, 4));
      const third = await get(`/v1/conversations/${conv}/queue?limit=2&after=${second.headers.get('x-next-after')}`);
      expect(third.json).toEqual(all.slice(4));
      expect(third.headers.get('x-next-after')).toBeNull();
      const pending = await get(`/v1/conversations/${conv}/queue?pending=true&limit=1`);
      expect(pending.json).toEqual(all.slice(3, 4));
      expect((await get(`/v1/conversations/${conv}/queue?pending=true&limit=1&after=${pending.headers.get('x-next-after')}`)).json).toEqual(all.slice(4));
      for (const q of ['limit=0', 'limit=1001', 'after=-1', 'after=x']) expectError(await get(`/v1/conversations/${conv}/queue?${q}`), 422, 'validation');
    });

    it('refuses any other pending value with 422', async () => {
      for (const q of ['pending=yes', 'pending=1', 'pending=TRUE', 'pending=true&pending=false']) {
        const r = await get(`/v1/conversations/${conv}/queue?${q}`);
        expectError(r, 422, 'validation');
        expect(r.json.error.message).toMatch(/pending/);
      }
    });
  });

  it('GET /v1/tasks/:taskId/commands: every attempt by attempt, bigints as numbers', async () => {
    const r = await get(`/v1/tasks/${taskA}/commands`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual([
      {
        commandId: `cmd-${taskA}`,
        attempt: 1,
        runnerId: 'runner-1',
        exitCode: null,
        signal: 'SIGKILL',
        endOffset: 22,
        reason: 'lost',
        startedAt: at(14),
        finishedAt: at(15),
        resultState: 'unavailable',
        outputBytes: 14,
        truncation: { droppedFrom: 12, droppedTo: 20, droppedBytes: 8 },
        deliveredTo: null,
      },
      {
        commandId: `cmd-${taskA}-2`,
        attempt: 2,
        runnerId: 'runner-2',
        exitCode: 0,
        signal: null,
        endOffset: BIG,
        reason: 'exited',
        startedAt: at(20),
        finishedAt: at(21),
        resultState: 'delivered',
        outputBytes: BIG,
        truncation: null,
        deliveredTo: 'agent',
      },
    ]);
    // Another task's attempts stay its own.
    expect((await get(`/v1/tasks/${taskB}/commands`)).json.map((c: { commandId: string }) => c.commandId)).toEqual([`cmd-${taskB}`]);
  });

  describe('GET /v1/tasks/:taskId/commands/:commandId/log-index', () => {
    const a1 = [
      { kind: 'stdout', offset: 0, bytes: 5 },
      { kind: 'stderr', offset: 5, bytes: 3 },
      { kind: 'stdout', offset: 8, bytes: 4 },
      { kind: 'truncated', offset: 12, bytes: 8 },
      { kind: 'stdout', offset: 20, bytes: 2 },
      { kind: 'exit', offset: 22, bytes: 0 },
    ];
    const index = (r: { json: { kind: string; offset: number; bytes: number; logsSeq: number }[] }) => r.json.map(({ kind, offset, bytes }) => ({ kind, offset, bytes }));

    it('lists where each chunk, marker and exit record sits, by offset, with increasing LOGS sequences', async () => {
      const r = await get(`/v1/tasks/${taskA}/commands/cmd-${taskA}/log-index`);
      expect(r.status).toBe(200);
      expect(index(r)).toEqual(a1);
      const logsSeqs = (r.json as { logsSeq: number }[]).map((x) => x.logsSeq);
      expect(logsSeqs.every((s) => Number.isSafeInteger(s) && s > 0)).toBe(true);
      expect(logsSeqs).toEqual([...logsSeqs].sort((x, y) => x - y));
      expect(r.headers.get('x-next-after')).toBeNull();
      // `after` is exclusive: after=0 leaves out the row at offset 0.
      expect(index(await get(`/v1/tasks/${taskA}/commands/cmd-${taskA}/log-index?after=0`))).toEqual(a1.slice(1));
    });

    it('pages by offset with X-Next-After, never splitting one offset', async () => {
      const first = await get(`/v1/tasks/${taskA}/commands/cmd-${taskA}/log-index?limit=4`);
      expect(index(first)).toEqual(a1.slice(0, 4));
      expect(first.headers.get('x-next-after')).toBe('12');
      const rest = await get(`/v1/tasks/${taskA}/commands/cmd-${taskA}/log-index?limit=4&after=12`);
      expect(index(rest)).toEqual(a1.slice(4));
      expect(rest.headers.get('x-next-after')).toBeNull();

      // The second attempt (named by `commands`, not by the task row): two rows share offset 4.
      const path = `/v1/tasks/${taskA}/commands/cmd-${taskA}-2/log-index`;
      const head = await get(`${path}?limit=1`);
      expect(index(head)).toEqual([{ kind: 'stdout', offset: 0, bytes: 4 }]);
      expect(head.headers.get('x-next-after')).toBe('0');
      const tail = await get(`${path}?limit=1&after=0`);
      expect(index(tail)).toEqual([
        { kind: 'exit', offset: 4, bytes: 0 },
        { kind: 'truncated', offset: 4, bytes: 0 },
      ]);
      expect(tail.headers.get('x-next-after')).toBeNull();
      expect((await get(`${path}?limit=5000`)).status).toBe(200);
    });

    it('answers an empty list for the task’s own command before anything was logged', async () => {
      const fresh = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
      const r = await get(`/v1/tasks/${fresh}/commands/cmd-${fresh}/log-index`);
      expect([r.status, r.json]).toEqual([200, []]);
      expect((await get(`/v1/tasks/${fresh}/commands`)).json).toEqual([]);
    });

    it('refuses bad paging values with 422', async () => {
      for (const q of ['limit=0', 'limit=5001', 'limit=x', 'after=-5', 'after=1e3']) {
        const r = await get(`/v1/tasks/${taskA}/commands/cmd-${taskA}/log-index?${q}`);
        expectError(r, 422, 'validation');
        expect(r.json.error.message).toMatch(/after|limit/);
      }
    });

    it('answers 404 for a command of another task, an unknown one and a malformed one', async () => {
      for (const commandId of [`cmd-${taskB}`, 'cmd-nope', 'bad.id', `cmd-${taskA}-3`]) {
        expectError(await get(`/v1/tasks/${taskA}/commands/${commandId}/log-index`), 404, 'not_found');
      }
      // The same command through its own task is fine.
      expect(index(await get(`/v1/tasks/${taskB}/commands/cmd-${taskB}/log-index`))).toEqual([{ kind: 'exit', offset: 0, bytes: 0 }]);
    });
  });

  it('hides every read model from non-members and other tenants (404), like a missing id', async () => {
    const routes = [
      `/v1/conversations/${conv}/runs`,
      `/v1/conversations/${conv}/todos`,
      `/v1/conversations/${conv}/queue`,
      `/v1/tasks/${taskA}/commands`,
      `/v1/tasks/${taskA}/commands/cmd-${taskA}/log-index`,
    ];
    for (const path of routes) {
      for (const who of [bob, mallory, aliceElsewhere]) expectError(await get(path, who), 404, 'not_found');
      expectError(await get(path.replace(conv, 'no-such-conversation').replace(`/tasks/${taskA}/`, '/tasks/no-such-task/')), 404, 'not_found');
      expectError(await get(path.replace(conv, 'bad.id').replace(`/tasks/${taskA}/`, '/tasks/bad.id/')), 404, 'not_found');
      // A bad query value from someone who may not see it is still a 404: nothing is revealed.
      expectError(await get(`${path}?limit=0&pending=x`, mallory), 404, 'not_found');
      expect((await h.call('GET', path, null)).status).toBe(401);
    }
    // Once a member, bob sees them.
    expect((await h.call('POST', `/v1/conversations/${conv}/members`, alice, { userId: 'bob' })).status).toBe(204);
    for (const path of routes) expect((await get(path, bob)).status).toBe(200);
  });
});
