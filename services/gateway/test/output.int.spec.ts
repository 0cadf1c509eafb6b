import { topology } from '@handplane/contracts';
import { waitFor } from '@handplane/testing';
import { expectError, startHarness, type Harness } from './harness';

/** `GET /v1/tasks/:id/output` and the task views, from rows written straight into the read models. */
describe('gateway task output (real NATS + Postgres)', () => {
  let h: Harness;
  let conv: string;
  const alice: [string, string] = ['alice', 'acme'];
  // 0..255 twice, a NUL, invalid UTF-8: bytes must come back exactly.
  const chunks = [Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from([0xff, 0xfe, 0x00, 0x01]), Buffer.from('tail\n'), Buffer.from(Array.from({ length: 256 }, (_, i) => 255 - i))];
  const all = Buffer.concat(chunks);

  beforeAll(async () => {
    h = await startHarness('gwout');
    conv = await h.conversation(alice);
  });
  afterAll(() => h?.stop());

  async function insertTask(taskId: string, over: { resultState?: string; outputBytes?: number; status?: string; conversationId?: string; tenant?: string; origin?: string } = {}) {
    await h.pool.query(
      `INSERT INTO tasks (task_id, command_id, conversation_id, tenant, user_id, origin, command, status, background, attempt, epoch,
                          exit_code, signal, result_state, output_bytes, created_at, started_at, finished_at, deadline_at)
       VALUES ($1, $2, $3, $4, 'alice', $8, 'make all', $5, true, 1, 1, 0, NULL, $6, $7,
               '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z', '2026-01-01T00:01:00Z', '2026-01-01T01:00:00Z')`,
      [taskId, `c-${taskId}`, over.conversationId ?? conv, over.tenant ?? 'acme', over.status ?? 'succeeded', over.resultState ?? 'readable', over.outputBytes ?? all.length, over.origin ?? 'user'],
    );
  }
  async function insertLog(commandId: string, parts: Buffer[]) {
    let offset = 0;
    for (const p of parts) {
      await h.pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ($1, $2, 1, $3)`, [commandId, offset, p]);
      offset += p.length;
    }
  }
  const cursor = (commandId: string, taskId: string, state: string, end: number | null) =>
    h.pool.query(
      `INSERT INTO ingest_cursors (command_id, task_id, conversation_id, attempt, runner_id, committed_offset, end_offset, result_state) VALUES ($1, $2, $3, 1, 'r1', $4, $5, $6)`,
      [commandId, taskId, conv, end ?? 0, end, state],
    );

  it('shows tasks in the exact public shape', async () => {
    await insertTask('task-shape');
    const r = await h.call('GET', '/v1/tasks/task-shape', alice);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      taskId: 'task-shape',
      commandId: 'c-task-shape',
      conversationId: conv,
      userId: 'alice',
      command: 'make all',
      status: 'succeeded',
      background: true,
      attempt: 1,
      epoch: 1,
      exitCode: 0,
      signal: null,
      resultState: 'readable',
      outputBytes: all.length,
      createdAt: '2026-01-01T00:00:00.000Z',
      startedAt: '2026-01-01T00:00:01.000Z',
      finishedAt: '2026-01-01T00:01:00.000Z',
      deadlineAt: '2026-01-01T01:00:00.000Z',
      // A row written without the coordinator has no receipt; the coordinator always writes one.
      receipt: null,
      awaitingInput: null,
    });
    const list = await h.call('GET', `/v1/conversations/${conv}/tasks`, alice);
    expect(list.json.map((t: { taskId: string }) => t.taskId)).toContain('task-shape');
  });

  it('returns exact bytes from offset 0 and from the middle of a chunk, with the headers', async () => {
    await insertTask('t-read');
    await insertLog('c-t-read', chunks);
    await cursor('c-t-read', 't-read', 'readable', all.length);
    const whole = await h.call('GET', '/v1/tasks/t-read/output?offset=0', alice);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('application/octet-stream');
    expect(whole.bytes.equals(all)).toBe(true);
    expect([whole.headers.get('x-next-offset'), whole.headers.get('x-result-state'), whole.headers.get('x-output-complete')]).toEqual([String(all.length), 'readable', 'true']);

    for (const from of [1, 255, 256, 258, 260, all.length - 1]) {
      const r = await h.call('GET', `/v1/tasks/t-read/output?offset=${from}`, alice);
      expect(r.bytes.equals(all.subarray(from))).toBe(true);
      expect(r.headers.get('x-next-offset')).toBe(String(all.length));
      expect(r.headers.get('x-output-complete')).toBe('true');
    }
    const atEnd = await h.call('GET', `/v1/tasks/t-read/output?offset=${all.length}`, alice);
    expect([atEnd.bytes.length, atEnd.headers.get('x-next-offset'), atEnd.headers.get('x-output-complete')]).toEqual([0, String(all.length), 'true']);
    const noOffset = await h.call('GET', '/v1/tasks/t-read/output', alice);
    expect(noOffset.bytes.equals(all)).toBe(true);
  });

  it('says incomplete while pending or unavailable, and never returns bytes past a gap', async () => {
    await insertTask('t-pending', { status: 'running', resultState: 'result_pending', outputBytes: 0 });
    await insertLog('c-t-pending', chunks.slice(0, 2));
    await cursor('c-t-pending', 't-pending', 'result_pending', null);
    const pending = await h.call('GET', '/v1/tasks/t-pending/output?offset=0', alice);
    expect(pending.bytes.equals(Buffer.concat(chunks.slice(0, 2)))).toBe(true);
    expect([pending.headers.get('x-result-state'), pending.headers.get('x-output-complete')]).toEqual(['result_pending', 'false']);

    // Lost host: the durable prefix stays readable, the API says it is incomplete.
    await insertTask('t-lost', { status: 'lost', resultState: 'unavailable', outputBytes: 256 });
    await h.pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ('c-t-lost', 0, 1, $1), ('c-t-lost', 300, 1, $2)`, [chunks[0], chunks[2]]);
    const lost = await h.call('GET', '/v1/tasks/t-lost/output?offset=0', alice);
    expect(lost.bytes.equals(chunks[0]!)).toBe(true);
    expect([lost.headers.get('x-next-offset'), lost.headers.get('x-result-state'), lost.headers.get('x-output-complete')]).toEqual(['256', 'unavailable', 'false']);
  });

  it('caps one response at 4 MiB and continues from X-Next-Offset', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024 + 123);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7 + (i >> 11)) & 0xff;
    await insertTask('t-big', { outputBytes: big.length });
    await insertLog('c-t-big', [big.subarray(0, 3_000_000), big.subarray(3_000_000, 4_500_000), big.subarray(4_500_000)]);
    const first = await h.call('GET', '/v1/tasks/t-big/output?offset=10', alice);
    expect(first.bytes.length).toBe(4 * 1024 * 1024);
    expect(first.bytes.equals(big.subarray(10, 10 + 4 * 1024 * 1024))).toBe(true);
    expect(first.headers.get('x-output-complete')).toBe('false');
    const next = Number(first.headers.get('x-next-offset'));
    const second = await h.call('GET', `/v1/tasks/t-big/output?offset=${next}`, alice);
    expect(second.bytes.equals(big.subarray(next))).toBe(true);
    // No cursor row: the task's own result state and byte count decide.
    expect([second.headers.get('x-result-state'), second.headers.get('x-output-complete')]).toEqual(['readable', 'true']);
  });

  it('walks over the range the output cap dropped, saying so on every response', async () => {
    const out = Buffer.alloc(1000);
    for (let i = 0; i < out.length; i++) out[i] = (i * 13) & 0xff;
    await insertTask('t-cut', { outputBytes: out.length });
    await insertLog('c-t-cut', [out.subarray(0, 60), out.subarray(60, 100)]);
    await h.pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ('c-t-cut', 900, 1, $1)`, [out.subarray(900)]);
    await cursor('c-t-cut', 't-cut', 'readable', out.length);
    await h.pool.query(`UPDATE ingest_cursors SET dropped_from = 100, dropped_to = 900, drop_final = true WHERE command_id = 'c-t-cut'`);
    const at = async (offset: number) => {
      const r = await h.call('GET', `/v1/tasks/t-cut/output?offset=${offset}`, alice);
      expect(r.status).toBe(200);
      expect(r.headers.get('x-output-truncated')).toBe('100-900');
      return { bytes: r.bytes, next: Number(r.headers.get('x-next-offset')), complete: r.headers.get('x-output-complete') };
    };
    const head = await at(0);
    expect([head.bytes.equals(out.subarray(0, 100)), head.next, head.complete]).toEqual([true, 100, 'false']);
    for (const inGap of [100, 500, 899]) expect(await at(inGap)).toEqual({ bytes: Buffer.alloc(0), next: 900, complete: 'false' });
    const tail = await at(900);
    expect([tail.bytes.equals(out.subarray(900)), tail.next, tail.complete]).toEqual([true, 1000, 'true']);
    // Following X-Next-Offset from 0 yields head + tail, and reaches the end.
    const seen: Buffer[] = [];
    for (let off = 0, n = 0; off < out.length && n < 10; n++) {
      const r = await at(off);
      seen.push(r.bytes);
      off = r.next;
    }
    expect(Buffer.concat(seen).equals(Buffer.concat([out.subarray(0, 100), out.subarray(900)]))).toBe(true);
    // An output the cap never touched carries no truncation header.
    expect((await h.call('GET', '/v1/tasks/t-read/output?offset=0', alice)).headers.get('x-output-truncated')).toBeNull();
  });

  it("hands a person's own finished result over (mark-delivered) once the last byte is served, and only then", async () => {
    const t = topology(h.nats.prefix);
    const seen: { commandId: string; deliveredTo: string }[] = [];
    const sub = h.nats.nats.nc.subscribe(t.rpc.markDelivered, {
      callback: (_err, m) => {
        seen.push(m.json());
        m.respond(JSON.stringify({ ok: true, resultState: 'delivered', appended: true }));
      },
    });
    try {
      await insertTask('t-deliver');
      await insertLog('c-t-deliver', chunks);
      await cursor('c-t-deliver', 't-deliver', 'readable', all.length);
      await insertTask('t-agent', { origin: 'agent' });
      await insertLog('c-t-agent', chunks);
      await cursor('c-t-agent', 't-agent', 'readable', all.length);
      await insertTask('t-half', { status: 'running', resultState: 'result_pending', outputBytes: 0 });
      await insertLog('c-t-half', chunks);
      await cursor('c-t-half', 't-half', 'result_pending', null);

      // The gateway would ask (in order, on one connection) before answering: the last one is the sentinel.
      await h.call('GET', '/v1/tasks/t-agent/output?offset=0', alice); // the agent's: the runtime delivers it
      await h.call('GET', '/v1/tasks/t-half/output?offset=0', alice); // not final yet
      await h.call('GET', '/v1/tasks/t-deliver/output?offset=3', alice); // ends at the last byte
      await waitFor(() => seen.length >= 1 || undefined, 10_000, 'mark-delivered');
      expect(seen).toEqual([{ commandId: 'c-t-deliver', deliveredTo: 'user' }]);
    } finally {
      sub.unsubscribe();
    }
  });

  it('refuses a bad offset with 422', async () => {
    for (const bad of ['-1', '1.5', 'abc', '1e3', '99999999999999999999', '0x10']) {
      expectError(await h.call('GET', `/v1/tasks/t-read/output?offset=${bad}`, alice), 422, 'validation');
    }
    expectError(await h.call('GET', '/v1/tasks/t-read/output?offset=1&offset=2', alice), 422, 'validation');
  });

  it('hides tasks and output of other tenants and non-members (404)', async () => {
    const other = await h.conversation(['eve', 'evil']);
    await insertTask('t-evil', { conversationId: other, tenant: 'evil' });
    await insertLog('c-t-evil', chunks);
    for (const path of ['/v1/tasks/t-evil', '/v1/tasks/t-evil/output?offset=0']) expectError(await h.call('GET', path, alice), 404, 'not_found');
    for (const who of [['mallory', 'evil'], ['bob', 'acme'], ['alice', 'evil']] as [string, string][]) {
      for (const path of ['/v1/tasks/t-read', '/v1/tasks/t-read/output?offset=0', `/v1/conversations/${conv}/tasks`]) expectError(await h.call('GET', path, who), 404, 'not_found');
    }
    expectError(await h.call('GET', '/v1/tasks/no-such-task', alice), 404, 'not_found');
    expectError(await h.call('GET', '/v1/tasks/no-such-task/output?offset=0', alice), 404, 'not_found');
    // Eve (the member) does see it.
    expect((await h.call('GET', '/v1/tasks/t-evil/output?offset=0', ['eve', 'evil'])).bytes.equals(all)).toBe(true);
  });
});
