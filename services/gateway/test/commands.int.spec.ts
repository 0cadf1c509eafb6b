import { startTaskRequestSchema, type StartTaskRequest } from '@handplane/contracts';
import { RunnerRegistry } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { expectError, startHarness, type Harness } from './harness';

/**
 * `POST /v1/conversations/:id/commands` against in-test responders standing in for the
 * coordinator on the real RPC subject, and readiness.
 */
describe('gateway commands and readiness (real NATS + Postgres)', () => {
  let h: Harness;
  let conv: string;
  const alice: [string, string] = ['alice', 'acme'];
  beforeAll(async () => {
    h = await startHarness('gwcmd', {}, { projectionWaitMs: 1500, rpcTimeoutMs: 1500 });
    conv = await h.conversation(alice);
  });
  afterAll(() => h?.stop());

  /** Answers start-task requests with `answer(request)`; records what it was asked. */
  function coordinator(answer: (req: StartTaskRequest) => Promise<unknown> | unknown) {
    const seen: StartTaskRequest[] = [];
    const sub = h.nats.nats.nc.subscribe(h.nats.topology.rpc.startTask, {
      callback: (_err, msg) => {
        const req = startTaskRequestSchema.parse(JSON.parse(Buffer.from(msg.data).toString('utf8')));
        seen.push(req);
        void Promise.resolve(answer(req)).then((reply) => msg.respond(Buffer.from(JSON.stringify(reply))));
      },
    });
    return { seen, stop: () => sub.unsubscribe() };
  }
  const taskRows = async () => (await h.pool.query('SELECT task_id FROM tasks')).rowCount;
  const cmd = (body: unknown, headers: Record<string, string> = {}) => h.call('POST', `/v1/conversations/${conv}/commands`, alice, body, headers);

  it('answers 503 JSON when no coordinator answers', async () => {
    expectError(await cmd({ command: 'echo hi' }), 503, 'unavailable');
    expect(await taskRows()).toBe(0);
  });

  it('answers 503 (not 201) when the coordinator says ok but the task never becomes visible', async () => {
    const c = coordinator(() => ({ ok: true, taskId: 'ghost', commandId: 'ghost-c', seq: 999_999 }));
    try {
      const r = await cmd({ command: 'echo hi' });
      expectError(r, 503, 'unavailable');
      expect(r.json.error.message).toContain('ghost');
      expect(c.seen).toHaveLength(1);
    } finally {
      c.stop();
    }
  });

  it('maps coordinator errors: validation → 422, anything else → 503', async () => {
    const c = coordinator(() => ({ ok: false, error: { code: 'validation', message: 'refused: background job' } }));
    try {
      const r = await cmd({ command: 'sleep 1 &' });
      expectError(r, 422, 'validation');
      expect(r.json.error.message).toBe('refused: background job');
    } finally {
      c.stop();
    }
    const broken = coordinator(() => ({ ok: false, error: { code: 'internal', message: 'boom' } }));
    try {
      expectError(await cmd({ command: 'echo hi' }), 503, 'unavailable');
    } finally {
      broken.stop();
    }
    const garbage = coordinator(() => ({ nonsense: true }));
    try {
      expectError(await cmd({ command: 'echo hi' }), 503, 'unavailable');
    } finally {
      garbage.stop();
    }
  });

  it('sends the request a coordinator needs and answers 201 once the tasks projection shows the task', async () => {
    // Stands in for the coordinator: registers the task in the read model it owns, then answers.
    const c = coordinator(async (req) => {
      const taskId = `t-${req.requestId.slice(0, 12)}`;
      await h.pool.query(
        `INSERT INTO tasks (task_id, command_id, conversation_id, tenant, user_id, origin, command, status, attempt, epoch, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'starting', 1, $8, now()) ON CONFLICT (task_id) DO NOTHING`,
        [taskId, `c-${taskId}`, req.conversationId, req.tenant, req.userId, req.origin, req.input.command, req.epoch],
      );
      await h.pool.query(`INSERT INTO projector_positions (name, seq) VALUES ('tasks', 42) ON CONFLICT (name) DO UPDATE SET seq = 42`);
      return { ok: true, taskId, commandId: `c-${taskId}`, seq: 42 };
    });
    try {
      const body = { command: 'make test', cwd: 'src', env: { CI: '1' }, timeoutMs: 60_000 };
      const r = await cmd(body, { 'idempotency-key': 'build-1' });
      expect(r.status).toBe(201);
      expect(r.json).toEqual({ taskId: expect.any(String), commandId: `c-${r.json.taskId}` });
      expect(c.seen[0]).toEqual({ requestId: expect.any(String), conversationId: conv, tenant: 'acme', userId: 'alice', origin: 'user', epoch: 1, input: body });
      const task = await h.call('GET', `/v1/tasks/${r.json.taskId}`, alice);
      expect(task.json).toMatchObject({ taskId: r.json.taskId, status: 'starting', userId: 'alice', command: 'make test', epoch: 1 });

      // A retry with the same key carries the same request id (so the coordinator answers the same task);
      // another key or none gets a new one.
      const again = await cmd(body, { 'idempotency-key': 'build-1' });
      expect(again.json).toEqual(r.json);
      await cmd(body);
      expect(c.seen.map((s) => s.requestId === c.seen[0]!.requestId)).toEqual([true, true, false]);
    } finally {
      c.stop();
    }
  });

  it('is ready only with NATS, Postgres and a live runner', async () => {
    const before = await h.call('GET', '/readyz', null);
    expect(before.status).toBe(503);
    expect(before.json.checks).toEqual(
      expect.arrayContaining([
        { name: 'nats', ok: true },
        { name: 'postgres', ok: true },
        expect.objectContaining({ name: 'runner', ok: false }),
      ]),
    );
    const registry = await RunnerRegistry.open(h.nats.nats, h.nats.topology.runnersBucket);
    await registry.heartbeat({ runnerId: 'r1', address: '127.0.0.1:1', capacity: 4, running: 0, version: 'test', bootId: 'b1', heartbeatAt: new Date().toISOString() });
    await waitFor(async () => (await h.call('GET', '/readyz', null)).status === 200, 5_000, 'ready');
    // A stale heartbeat is not a live runner.
    await registry.heartbeat({ runnerId: 'r1', address: '127.0.0.1:1', capacity: 4, running: 0, version: 'test', bootId: 'b1', heartbeatAt: new Date(Date.now() - 3_600_000).toISOString() });
    expect((await h.call('GET', '/readyz', null)).status).toBe(503);
  });
});
