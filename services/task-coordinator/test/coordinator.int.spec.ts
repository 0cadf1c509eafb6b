import type { StartTaskReply } from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { waitForProjection } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const ofType = <T extends TaskEvent['type']>(events: TaskEvent[], type: T) => events.filter((e): e is Extract<TaskEvent, { type: T }> => e.type === type);
const noticesOf = (events: ConversationEvent[], taskId: string) => events.filter((e) => e.type.startsWith('task.') && (e.data as { taskId?: string }).taskId === taskId);

/** The two events the log-ingestor appends once every byte up to the exit record is durable. */
function settled(r: Ok, exitCode: number, bytes: number): SandboxCommandEvent[] {
  const ids = { commandId: r.commandId, taskId: r.taskId, attempt: 1 };
  const at = '2026-01-01T00:00:05.000Z';
  return [
    { type: 'CommandExited', data: { ...ids, runnerId: 'runner-double', exitCode, signal: null, endOffset: bytes, startedAt: at, finishedAt: at, reason: '' }, metadata: { at } },
    { type: 'CommandResultReadable', data: { ...ids, outputBytes: bytes }, metadata: { at } },
  ];
}

describe('task coordinator (real NATS and Postgres, gRPC runner double)', () => {
  let h: Harness;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('coord');
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
  });

  const startRunning = async (requestId: string, over: Partial<Parameters<typeof startBody>[0]> = {}) => {
    const r = ok(await h.startTask(startBody({ requestId, ...over })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    return r;
  };
  const finish = async (r: Ok, exitCode: number, bytes: number) => {
    await h.appendCommandEvents(r.commandId, settled(r, exitCode, bytes), `ingest:${r.commandId}`);
    return h.waitForTaskEvent(r.taskId, 'TaskFinished');
  };
  const row = async (taskId: string) => (await h.pool.query('SELECT * FROM tasks WHERE task_id = $1', [taskId])).rows[0];

  it('registers a task once for a repeated request id, then starts it on the runner with its generation and env', async () => {
    const body = startBody({ requestId: 'req-1', command: 'make test', cwd: 'src', env: { FOO: 'bar' }, timeoutMs: 5000 });
    const a = ok(await h.startTask(body));
    const b = ok(await h.startTask(body));
    expect(b).toEqual(a);
    expect(a.taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);

    const started = await h.waitForTaskEvent(a.taskId, 'TaskStarted');
    expect(started.data).toMatchObject({ taskId: a.taskId, commandId: a.commandId, attempt: 1, runnerId: runner.runnerId });
    const events = await h.taskEvents(a.taskId);
    expect(events.map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStarted']);
    const { events: stored } = await h.store.read(h.t.streams.TASKS, h.t.task(a.taskId), (d) => d);
    expect(stored[0]!.seq).toBe(a.seq);

    const execs = runner.execsOf(a.commandId);
    expect(execs).toHaveLength(1);
    expect(execs[0]).toEqual({
      commandId: a.commandId,
      taskId: a.taskId,
      conversationId: 'conv-1',
      tenant: 'acme',
      generation: { epoch: 3, attempt: 1 },
      command: 'make test',
      cwd: 'src',
      env: { FOO: 'bar' },
      timeoutMs: 5000 + 2 * h.config.STOP_GRACE_MS, // the runner's backstop comes after the deadline's stop and its grace
    });
    await waitFor(async () => noticesOf(await h.convEvents('conv-1'), a.taskId).find((e) => e.type === 'task.started'), 10_000, 'task.started');
    const base = `http://127.0.0.1:${h.coordinator!.httpPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect({ status: ready.status, body: await ready.json() }).toMatchObject({ status: 200, body: { status: 'ready' } });
    const notice = noticesOf(await h.convEvents('conv-1'), a.taskId).find((e) => e.type === 'task.started')!;
    expect(notice.data).toEqual({ taskId: a.taskId, commandId: a.commandId, attempt: 1, runnerId: runner.runnerId, userId: 'alice', command: 'make test' });
  });

  it('derives ids per tenant, applies the default deadline and refuses one above the maximum', async () => {
    const here = ok(await h.startTask(startBody({ requestId: 'req-2', tenant: 'acme' })));
    const there = ok(await h.startTask(startBody({ requestId: 'req-2', tenant: 'globex', conversationId: 'conv-globex' })));
    expect(there.taskId).not.toBe(here.taskId);
    const reg = ofType(await h.taskEvents(here.taskId), 'TaskRegistered')[0]!;
    expect(reg.data).toMatchObject({ timeoutMs: h.config.TASK_DEADLINE_MS, foregroundWindowMs: 300, epoch: 3, attempt: 1 });

    const tooLong = await h.startTask(startBody({ requestId: 'req-3', timeoutMs: h.config.TASK_DEADLINE_MAX_MS + 1 }));
    expect(tooLong).toMatchObject({ ok: false, error: { code: 'validation' } });
    const reused = await h.startTask(startBody({ requestId: 'req-2', command: 'something else' }));
    expect(reused).toMatchObject({ ok: false, error: { code: 'illegal_state' } });
  });

  it('moves a task still running past its window to the background exactly once', async () => {
    const r = await startRunning('req-bg', { conversationId: 'conv-bg' });
    await waitFor(async () => (await row(r.taskId))?.foreground_until, 10_000, 'projected start');
    await sleep(300); // several sweeps see the task inside its window
    expect(ofType(await h.taskEvents(r.taskId), 'TaskBackgrounded')).toHaveLength(0);

    h.clock.advance(300);
    await h.waitForTaskEvent(r.taskId, 'TaskBackgrounded');
    await waitFor(async () => (await row(r.taskId))?.background === true, 10_000, 'projected background');
    await waitFor(async () => noticesOf(await h.convEvents('conv-bg'), r.taskId).some((e) => e.type === 'task.backgrounded'), 10_000, 'task.backgrounded');
    await sleep(300); // more sweeps, now with the projection up to date
    expect(ofType(await h.taskEvents(r.taskId), 'TaskBackgrounded')).toHaveLength(1);
    expect(noticesOf(await h.convEvents('conv-bg'), r.taskId).filter((e) => e.type === 'task.backgrounded')).toEqual([
      expect.objectContaining({ data: { taskId: r.taskId, commandId: r.commandId } }),
    ]);
  });

  it('finishes a task from its command result: notices, one internal event, and a true projection row', async () => {
    const good = await startRunning('req-ok', { conversationId: 'conv-fin', userId: 'bob', origin: 'agent', runId: 'run-7', timeoutMs: 60_000 });
    const bad = await startRunning('req-bad', { conversationId: 'conv-fin', userId: 'bob' });
    const fGood = await finish(good, 0, 11);
    const fBad = await finish(bad, 2, 3);
    expect(fGood.data).toMatchObject({ status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 11 });
    expect(fBad.data).toMatchObject({ status: 'failed', exitCode: 2, resultState: 'readable', outputBytes: 3 });

    const conv = await waitFor(async () => {
      const ev = await h.convEvents('conv-fin');
      return ev.filter((e) => e.type === 'task.internal_event').length === 2 ? ev : undefined;
    }, 10_000, 'two internal events');
    const types = noticesOf(conv, good.taskId).map((e) => e.type).filter((t) => t !== 'task.backgrounded');
    expect(types).toEqual(['task.started', 'task.finished', 'task.result', 'task.internal_event']);
    const byType = (t: string) => noticesOf(conv, good.taskId).find((e) => e.type === t)!.data;
    // Every terminal task carries its receipt (issue 10.4).
    const receipt = expect.objectContaining({ outcome: 'exited', exitCode: 0, summary: 'exited with code 0' });
    expect(byType('task.finished')).toEqual({ taskId: good.taskId, commandId: good.commandId, status: 'succeeded', exitCode: 0, signal: null, receipt });
    expect(byType('task.result')).toEqual({ taskId: good.taskId, commandId: good.commandId, resultState: 'readable', outputBytes: 11 });
    expect(byType('task.internal_event')).toEqual({
      taskId: good.taskId,
      commandId: good.commandId,
      attempt: 1,
      userId: 'bob',
      origin: 'agent',
      runId: 'run-7',
      status: 'succeeded',
      exitCode: 0,
      signal: null,
      resultState: 'readable',
      outputBytes: 11,
      receipt,
    });
    expect(noticesOf(conv, bad.taskId).find((e) => e.type === 'task.internal_event')!.data).toMatchObject({ status: 'failed', exitCode: 2, userId: 'bob', origin: 'user' });

    const published = await waitFor(async () => {
      const r = await h.pool.query('SELECT task_id, published_at FROM task_notifications WHERE task_id = ANY($1)', [[good.taskId, bad.taskId]]);
      return r.rows.length === 2 && r.rows.every((x) => x.published_at) ? r.rows : undefined;
    }, 10_000, 'outbox rows published');
    expect(published).toHaveLength(2);

    const events = await h.taskEvents(good.taskId);
    const started = ofType(events, 'TaskStarted')[0]!;
    const { lastSeq } = await h.store.read(h.t.streams.TASKS, h.t.task(good.taskId), (d) => d);
    expect(await waitForProjection(h.pool, 'tasks', lastSeq)).toBe(true);
    const r = await row(good.taskId);
    const startedAt = new Date(started.data.startedAt).getTime();
    expect(r).toMatchObject({ status: 'succeeded', runner_id: runner.runnerId, exit_code: 0, signal: null, result_state: 'readable', user_id: 'bob', origin: 'agent', run_id: 'run-7', attempt: 1, epoch: 3 });
    expect(Number(r.output_bytes)).toBe(11);
    expect(Number(r.last_seq)).toBe(lastSeq);
    expect(r.created_at.toISOString()).toBe(ofType(events, 'TaskRegistered')[0]!.data.registeredAt);
    expect(r.started_at.getTime()).toBe(startedAt);
    expect(r.foreground_until.getTime()).toBe(startedAt + 300);
    expect(r.deadline_at.getTime()).toBe(startedAt + 60_000);
    expect(r.finished_at.toISOString()).toBe(fGood.data.finishedAt);
    expect((await row(bad.taskId)).status).toBe('failed');
  });

  it('fails the start when the runner refuses the command', async () => {
    runner.refuse.add('refuse-me');
    const r = ok(await h.startTask(startBody({ requestId: 'req-refused', command: 'refuse-me', conversationId: 'conv-refused' })));
    const fin = await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'failed', exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 });
    const events = await h.taskEvents(r.taskId);
    expect(events.map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStartFailed', 'TaskFinished']);
    expect(ofType(events, 'TaskStartFailed')[0]!.data.reason).toMatch(/refusing refuse-me/);
    expect(runner.execsOf(r.commandId)).toHaveLength(1); // a refusal is not retried
    await waitFor(async () => (await h.convEvents('conv-refused')).some((e) => e.type === 'task.internal_event'), 10_000, 'internal event');
  });

  it('validates task waits without revealing other conversations', async () => {
    const running = await startRunning('req-wait', { conversationId: 'conv-w' });
    const foreign = await startRunning('req-foreign', { conversationId: 'conv-other' });
    const done = await startRunning('req-done', { conversationId: 'conv-w' });
    await finish(done, 0, 1);

    const all = await h.validateWait('conv-w', [running.taskId, foreign.taskId, done.taskId, '00000000-0000-8000-8000-000000000000', 'no.such']);
    expect(all).toEqual({
      ok: true,
      valid: false,
      results: [
        { taskId: running.taskId, valid: true, status: 'running' },
        { taskId: foreign.taskId, valid: false, reason: 'unknown task' },
        { taskId: done.taskId, valid: false, reason: 'task already finished (succeeded)', status: 'succeeded' },
        { taskId: '00000000-0000-8000-8000-000000000000', valid: false, reason: 'unknown task' },
        { taskId: 'no.such', valid: false, reason: 'unknown task' },
      ],
    });
    expect(await h.validateWait('conv-w', [running.taskId])).toMatchObject({ ok: true, valid: true });
    expect(await h.validateWait('conv-other', [foreign.taskId])).toMatchObject({ ok: true, valid: true });
  });

  it('terminates a malformed message on task.* and goes on with the next one', async () => {
    await h.nats.js.publish(h.t.task('junk'), Buffer.from('not json at all'));
    await h.nats.js.publish(h.t.task('junk2'), Buffer.from(JSON.stringify({ type: 'TaskRegistered', v: 1, data: {}, metadata: { at: 'x' } })));
    const r = await startRunning('req-after-junk', { conversationId: 'conv-junk' });
    await waitFor(async () => (await h.convEvents('conv-junk')).some((e) => e.type === 'task.started'), 10_000, 'task.started after junk');
    const info = await h.waitForConsumerIdle('coordinator-tasks');
    expect(info.num_redelivered).toBe(0);
    await h.waitForConsumerIdle('coordinator-notices');
    expect(await waitForProjection(h.pool, 'tasks', r.seq)).toBe(true);
  });

  it('publishes an outbox row left unpublished (a crash between insert and publish) exactly once', async () => {
    const payload = { data: { taskId: 'crashed-task', commandId: 'c', attempt: 1, userId: 'carol', origin: 'user', status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 0 }, metadata: { at: '2026-01-01T00:00:00.000Z' } };
    await h.pool.query(`INSERT INTO task_notifications (task_id, attempt, conversation_id, payload) VALUES ('crashed-task', 1, 'conv-crash', $1)`, [JSON.stringify(payload)]);
    await waitFor(async () => (await h.pool.query(`SELECT published_at FROM task_notifications WHERE task_id = 'crashed-task'`)).rows[0].published_at, 10_000, 'swept');
    await sleep(500); // later sweeps find nothing to do
    const conv = await h.convEvents('conv-crash');
    expect(conv.map((e) => e.type)).toEqual(['task.internal_event']);
    expect(conv[0]!.data).toMatchObject({ taskId: 'crashed-task', userId: 'carol' });
  });

  it('never publishes a second internal event, even replayed after a restart past the duplicate window', async () => {
    const a = await startRunning('req-replay-a', { conversationId: 'conv-replay' });
    const b = await startRunning('req-replay-b', { conversationId: 'conv-replay' });
    const still = await startRunning('req-replay-running', { conversationId: 'conv-replay' });
    await finish(a, 0, 5);
    await finish(b, 1, 6);
    const internals = async () => (await h.convEvents('conv-replay')).filter((e) => e.type === 'task.internal_event');
    await waitFor(async () => (await internals()).length === 2, 10_000, 'two internal events');
    await waitFor(async () => (await row(still.taskId))?.foreground_until, 10_000, 'projected start');

    await h.restart(async () => {
      // Forget every message id, and make both consumers deliver the whole stream again.
      const info = await h.nats.jsm.streams.info(h.t.streams.CONV);
      await h.nats.jsm.streams.update(h.t.streams.CONV, { ...info.config, duplicate_window: 100_000_000 });
      await sleep(400);
      for (const name of ['coordinator-notices', 'coordinator-commands']) await h.nats.jsm.consumers.delete(h.t.streams.TASKS, h.t.durable(name));
      // The ingestor replays its last result with a new message id.
      await h.appendCommandEvents(a.commandId, [settled(a, 0, 5)[1]!], 'ingest-replayed');
    });
    await h.waitForConsumerIdle('coordinator-commands');
    await h.waitForConsumerIdle('coordinator-notices');
    await sleep(500); // an outbox sweep or two

    expect(ofType(await h.taskEvents(a.taskId), 'TaskFinished')).toHaveLength(1);
    expect(ofType(await h.taskEvents(b.taskId), 'TaskFinished')).toHaveLength(1);
    // The replay did happen: notices (deduplicated by NATS only) were published again...
    expect(noticesOf(await h.convEvents('conv-replay'), a.taskId).filter((e) => e.type === 'task.finished')).toHaveLength(2);
    // ...but the completions were not: the outbox rows decided.
    expect((await internals()).map((e) => (e.data as { taskId: string }).taskId).sort()).toEqual([a.taskId, b.taskId].sort());
    const rows = await h.pool.query('SELECT count(*)::int AS n FROM task_notifications WHERE task_id = ANY($1)', [[a.taskId, b.taskId]]);
    expect(rows.rows[0].n).toBe(2);

    // The foreground timer of the task that kept running survived the restart.
    h.clock.advance(300);
    await h.waitForTaskEvent(still.taskId, 'TaskBackgrounded');
  });
});

describe('task coordinator without a runner', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness('norunner', {}, { dispatchMaxDeliver: 2 });
  });
  afterAll(() => h?.close());

  it('fails the start with "no runner available" after the last delivery instead of staying starting', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'req-lonely', conversationId: 'conv-lonely' })));
    const fin = await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'failed', resultState: 'unavailable', outputBytes: 0 });
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStartFailed')[0]!.data.reason).toBe('no runner available');
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'failed', 10_000, 'projected failure');
    await waitFor(async () => (await h.convEvents('conv-lonely')).some((e) => e.type === 'task.internal_event'), 10_000, 'internal event');
  });
});
