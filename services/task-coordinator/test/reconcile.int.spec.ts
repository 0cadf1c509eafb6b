import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import type { StartTaskReply } from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { SignalKind } from '@handplane/proto';
import { waitFor } from '@handplane/testing';
import type { ReconcileReport } from '../src/app/reconcile';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const ofType = <T extends TaskEvent['type']>(events: TaskEvent[], type: T) => events.filter((e): e is Extract<TaskEvent, { type: T }> => e.type === type);
const internals = (events: ConversationEvent[]) => events.filter((e): e is Extract<ConversationEvent, { type: 'task.internal_event' }> => e.type === 'task.internal_event');

function result(r: { taskId: string; commandId: string }, exitCode: number): SandboxCommandEvent[] {
  const ids = { commandId: r.commandId, taskId: r.taskId, attempt: 1 };
  const at = '2026-01-01T00:00:05.000Z';
  return [
    { type: 'CommandExited', data: { ...ids, runnerId: 'runner-double', exitCode, signal: null, endOffset: 4, startedAt: at, finishedAt: at, reason: '' }, metadata: { at } },
    { type: 'CommandResultReadable', data: { ...ids, outputBytes: 4 }, metadata: { at } },
  ];
}

/** Runs reconciliation passes until one ran (another may hold the lock for a moment). */
async function reconcile(h: Harness): Promise<ReconcileReport> {
  return waitFor(() => h.coordinator!.reconcile(), 10_000, 'a reconciliation pass');
}

describe('reconciliation (real NATS and Postgres, gRPC runner doubles)', () => {
  let h: Harness;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('recon', { RUNNER_LOST_AFTER_MS: '5000' });
    runner = await RunnerDouble.start(h.nats, h.t, h.clock, 'recon-runner');
  });
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
  });

  const startRunning = async (requestId: string, conversationId = 'conv-recon') => {
    const r = ok(await h.startTask(startBody({ requestId, conversationId })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'running', 10_000, 'projected running');
    return r;
  };

  it('settles, at start-up, a task whose command finished while nobody watched; settling again changes nothing', async () => {
    const r = await startRunning('recon-1', 'conv-unwatched');
    await h.restart(async () => {
      runner.exited.set(r.commandId, { exitCode: 0, signal: '', reason: '', endOffset: 4 });
      await h.appendCommandEvents(r.commandId, result(r, 0), `ingest:${r.commandId}`);
      // The result consumer starts past that result, as if its delivery had been lost for good.
      await h.nats.jsm.consumers.delete(h.t.streams.TASKS, h.t.durable('coordinator-commands'));
      await h.nats.jsm.consumers.add(h.t.streams.TASKS, { durable_name: h.t.durable('coordinator-commands'), ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, filter_subject: h.t.all.cmd });
    });
    const fin = await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'succeeded', exitCode: 0, resultState: 'readable', outputBytes: 4 });
    const info = await h.nats.jsm.consumers.info(h.t.streams.TASKS, h.t.durable('coordinator-commands'));
    expect(info.delivered.consumer_seq).toBe(0); // reconciliation did it, not the consumer

    const before = await h.taskEvents(r.taskId);
    for (let i = 0; i < 2; i++) expect((await reconcile(h)).settled).not.toContain(r.taskId);
    expect(await h.taskEvents(r.taskId)).toEqual(before);
    await waitFor(async () => internals(await h.convEvents('conv-unwatched')).length === 1, 10_000, 'one internal event');
  });

  it('records the start of a command its runner runs when the coordinator died between Exec and TaskStarted', async () => {
    const at = h.clock.now().toISOString();
    const taskId = 'adopt-1';
    const registered: TaskEvent = {
      type: 'TaskRegistered',
      data: { taskId, commandId: 'adopt-1-c1', conversationId: 'conv-adopt', tenant: 'acme', userId: 'alice', origin: 'user', command: 'sleep 9', cwd: '', env: {}, epoch: 3, attempt: 1, foregroundWindowMs: 300, timeoutMs: 60_000, registeredAt: at },
      metadata: { at },
    };
    await h.restart(async () => {
      await h.store.append(h.t.task(taskId), [registered], { expectedLastSeq: 0, msgId: taskId });
      runner.execDirectly({ commandId: 'adopt-1-c1', taskId, conversationId: 'conv-adopt', tenant: 'acme', generation: { epoch: 3, attempt: 1 }, command: 'sleep 9', cwd: '', env: {}, timeoutMs: 0 });
      // The dispatch consumer starts past this registration, as if the instance holding it had died.
      await h.nats.jsm.consumers.delete(h.t.streams.TASKS, h.t.durable('coordinator-tasks'));
      await h.nats.jsm.consumers.add(h.t.streams.TASKS, { durable_name: h.t.durable('coordinator-tasks'), ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.New, filter_subject: h.t.all.task });
    });
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [taskId])).rows[0]?.status, 10_000, 'projected registration');
    await waitFor(async () => (await reconcile(h)).adopted.includes(taskId) || ofType(await h.taskEvents(taskId), 'TaskStarted').length > 0, 10_000, 'adopted');
    const started = await h.waitForTaskEvent(taskId, 'TaskStarted');
    expect(started.data).toMatchObject({ attempt: 1, runnerId: 'recon-runner', commandId: 'adopt-1-c1' });
    expect((await reconcile(h)).adopted).toEqual([]);
    expect(ofType(await h.taskEvents(taskId), 'TaskStarted')).toHaveLength(1);
    expect(runner.execsOf('adopt-1-c1')).toHaveLength(1);
  });

  it('kills a command still running for a task that already finished (fenced by its generation)', async () => {
    const r = await startRunning('recon-orphan');
    await h.appendCommandEvents(r.commandId, result(r, 1), `ingest:${r.commandId}`);
    await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'failed', 10_000, 'projected finish');
    // The double still reports the command running: an orphan.
    const report = await reconcile(h);
    expect(report.killed).toEqual([r.commandId]);
    expect(runner.signalsOf(r.commandId)).toEqual([expect.objectContaining({ kind: SignalKind.SIGNAL_KIND_KILL, generation: { epoch: 3, attempt: 1 } })]);
    runner.exited.set(r.commandId, { signal: 'SIGKILL', reason: 'killed', endOffset: 4 });
    expect((await reconcile(h)).killed).toEqual([]);
  });

  it('leaves alone a command the runner reports under another generation', async () => {
    const r = await startRunning('recon-fence');
    runner.reportAs.set(r.commandId, { epoch: 3, attempt: 4 });
    runner.exited.set(r.commandId, { exitCode: 0, signal: '', reason: '', endOffset: 0 });
    const report = await reconcile(h);
    expect([...report.settled, ...report.lost, ...report.awaitingResult]).not.toContain(r.taskId);
    expect(report.killed).not.toContain(r.commandId);
    expect((await h.taskEvents(r.taskId)).map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStarted']);
    runner.reportAs.delete(r.commandId);
    expect((await reconcile(h)).awaitingResult).toContain(r.taskId); // exited; the ingestor's result is still to come
  });

  it('marks lost a task whose live runner no longer knows its command, once past RUNNER_LOST_AFTER_MS', async () => {
    const r = await startRunning('recon-forgotten', 'conv-forgotten');
    runner.forget(r.commandId);
    expect((await reconcile(h)).lost).not.toContain(r.taskId); // too early to tell
    h.clock.advance(6_000);
    await runner.heartbeat();
    expect((await reconcile(h)).lost).toContain(r.taskId);
    const fin = await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'lost', exitCode: null, resultState: 'unavailable', outputBytes: 0 });
    const { events } = await h.store.read(h.t.streams.TASKS, h.t.cmd(r.commandId), (d) => JSON.parse(Buffer.from(d).toString()) as SandboxCommandEvent);
    expect(events.map((e) => e.event.type)).toEqual(['CommandResultUnavailable']);
    expect((await reconcile(h)).lost).toEqual([]);
    await waitFor(async () => internals(await h.convEvents('conv-forgotten')).length === 1, 10_000, 'one internal event');
  });

  it('marks lost (result unavailable, durable prefix kept) every task of a runner gone past RUNNER_LOST_AFTER_MS', async () => {
    const doomed = await RunnerDouble.start(h.nats, h.t, h.clock, 'aaa-doomed'); // sorts first: takes the next task
    const r = await startRunning('recon-doomed', 'conv-doomed');
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStarted')[0]!.data.runnerId).toBe('aaa-doomed');
    await h.pool.query(`INSERT INTO ingest_cursors (command_id, task_id, conversation_id, attempt, runner_id, committed_offset) VALUES ($1, $2, 'conv-doomed', 1, 'aaa-doomed', 42)`, [r.commandId, r.taskId]);
    await doomed.stop();
    expect((await reconcile(h)).lost).not.toContain(r.taskId); // missing from the registry only just now
    h.clock.advance(6_000);
    await runner.heartbeat();
    const report = await waitFor(async () => {
      const rep = await reconcile(h);
      return rep.lost.includes(r.taskId) ? rep : undefined;
    }, 10_000, 'lost');
    expect(report.lost).toEqual([r.taskId]);
    expect((await h.waitForTaskEvent(r.taskId, 'TaskFinished')).data).toMatchObject({ status: 'lost', resultState: 'unavailable', outputBytes: 42 });
  });
});

describe('a stop whose runner cannot be reached', () => {
  let h: Harness;
  let crashy: RunnerDouble;
  beforeAll(async () => {
    h = await harness('unreach', { RUNNER_LOST_AFTER_MS: '5000' });
    crashy = await RunnerDouble.start(h.nats, h.t, h.clock, 'crashy');
  });
  afterAll(async () => {
    await crashy?.stop();
    await h?.close();
  });

  it('stays stopping while the signal cannot be delivered (never cancelled without the exit), then ends lost', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'unreach-1', conversationId: 'conv-unreach' })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    await crashy.crash();
    expect(await h.stopTask({ taskId: r.taskId })).toEqual({ ok: true, status: 'stopping', attempt: 1 });
    await sleep(800); // several stop sweeps try the signal
    expect((await h.taskEvents(r.taskId)).map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStarted', 'TaskStopRequested']);
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'stopping', 10_000, 'projected stopping');
    h.clock.advance(6_000); // no heartbeat since: lost
    await waitFor(async () => (await reconcile(h)).lost.includes(r.taskId), 10_000, 'lost');
    expect((await h.waitForTaskEvent(r.taskId, 'TaskFinished')).data).toMatchObject({ status: 'lost', exitCode: null, signal: null, resultState: 'unavailable' });
  });
});

describe('retry of a lost attempt (RETRY_MAX_ATTEMPTS=2)', () => {
  let h: Harness;
  let doomed: RunnerDouble;
  let healthy: RunnerDouble | undefined;
  beforeAll(async () => {
    h = await harness('relost', { RUNNER_LOST_AFTER_MS: '5000', RETRY_MAX_ATTEMPTS: '2' });
    doomed = await RunnerDouble.start(h.nats, h.t, h.clock, 'doomed');
  });
  afterAll(async () => {
    await healthy?.stop();
    await doomed?.stop();
    await h?.close();
  });

  it('runs attempt 2 as a new command on a live runner; only the last attempt completes', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'lost-1', conversationId: 'conv-lost' })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'running', 10_000, 'projected running');
    healthy = await RunnerDouble.start(h.nats, h.t, h.clock, 'healthy');
    h.clock.advance(6_000); // doomed stops heart-beating
    await healthy.heartbeat();
    await waitFor(async () => (await reconcile(h)).lost.includes(r.taskId), 10_000, 'lost');
    const retried = await h.waitForTaskEvent(r.taskId, 'TaskRetried');
    expect(retried.data).toMatchObject({ previousAttempt: 1, attempt: 2, reason: 'runner lost' });
    const started = await waitFor(async () => ofType(await h.taskEvents(r.taskId), 'TaskStarted').find((e) => e.data.attempt === 2), 10_000, 'attempt 2 started');
    expect(started.data).toMatchObject({ runnerId: 'healthy', commandId: retried.data.commandId });
    expect(healthy.execsOf(retried.data.commandId)[0]!.generation).toEqual({ epoch: 3, attempt: 2 });
    await sleep(300);
    expect(internals(await h.convEvents('conv-lost'))).toHaveLength(0);

    const at = '2026-01-01T00:00:09.000Z';
    const ids = { commandId: retried.data.commandId, taskId: r.taskId, attempt: 2 };
    await h.appendCommandEvents(retried.data.commandId, [
      { type: 'CommandExited', data: { ...ids, runnerId: 'healthy', exitCode: 0, signal: null, endOffset: 2, startedAt: at, finishedAt: at, reason: '' }, metadata: { at } },
      { type: 'CommandResultReadable', data: { ...ids, outputBytes: 2 }, metadata: { at } },
    ], 'ingest-2');
    expect((await h.waitForTaskEvent(r.taskId, 'TaskFinished')).data).toMatchObject({ status: 'succeeded', attempt: 2, commandId: retried.data.commandId });
    const done = await waitFor(async () => {
      const i = internals(await h.convEvents('conv-lost'));
      return i.length ? i : undefined;
    }, 10_000, 'internal event');
    await sleep(500);
    expect(internals(await h.convEvents('conv-lost')).map((e) => e.data.attempt)).toEqual([2]);
    expect(done[0]!.data).toMatchObject({ taskId: r.taskId, status: 'succeeded' });
    expect(ofType(await h.taskEvents(r.taskId), 'TaskFinished')).toHaveLength(1);
  });
});
