import type { StartTaskReply } from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
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
const convOfType = <T extends ConversationEvent['type']>(events: ConversationEvent[], type: T) => events.filter((e): e is Extract<ConversationEvent, { type: T }> => e.type === type);

/** What the log-ingestor appends once the runner's exit record and every byte are durable. */
function exited(r: { taskId: string; commandId: string }, attempt: number, e: { exitCode: number | null; signal: string | null; reason: string }): SandboxCommandEvent[] {
  const ids = { commandId: r.commandId, taskId: r.taskId, attempt };
  const at = '2026-01-01T00:00:05.000Z';
  return [
    { type: 'CommandExited', data: { ...ids, runnerId: 'runner-double', exitCode: e.exitCode, signal: e.signal, endOffset: 4, startedAt: at, finishedAt: at, reason: e.reason }, metadata: { at } },
    { type: 'CommandResultReadable', data: { ...ids, outputBytes: 4 }, metadata: { at } },
  ];
}

describe('stop, stop-all and deadlines (real NATS and Postgres, gRPC runner double)', () => {
  let h: Harness;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('stops', { STOP_GRACE_MS: '1234' });
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
  const status = async (taskId: string) => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [taskId])).rows[0]?.status as string | undefined;

  it('stop-task: stopping until the runner proves the exit, then cancelled, signalled once with the generation and the grace', async () => {
    const r = await startRunning('stop-1', { conversationId: 'conv-stop' });
    expect(await h.stopTask({ taskId: r.taskId, attempt: 1 })).toEqual({ ok: true, status: 'stopping', attempt: 1 });
    await h.waitForTaskEvent(r.taskId, 'TaskStopSignalled');
    const signals = runner.signalsOf(r.commandId);
    expect(signals).toHaveLength(1);
    expect(signals[0]).toMatchObject({ taskId: r.taskId, generation: { epoch: 3, attempt: 1 }, graceMs: 1234, reason: 'user' });

    // Still stopping: no exit evidence yet, and more sweeps change nothing.
    await sleep(400);
    expect((await h.taskEvents(r.taskId)).map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStarted', 'TaskStopRequested', 'TaskStopSignalled']);
    expect(runner.signalsOf(r.commandId)).toHaveLength(1);
    await waitFor(async () => (await status(r.taskId)) === 'stopping', 10_000, 'projected stopping');
    expect(await h.stopTask({ taskId: r.taskId })).toEqual({ ok: true, status: 'stopping', attempt: 1 });

    await h.appendCommandEvents(r.commandId, exited(r, 1, { exitCode: null, signal: 'SIGTERM', reason: 'stopped' }), `ingest:${r.commandId}`);
    const fin = await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'cancelled', signal: 'SIGTERM', exitCode: null, resultState: 'readable' });
    const conv = await waitFor(async () => {
      const ev = await h.convEvents('conv-stop');
      return convOfType(ev, 'task.internal_event').length === 1 ? ev : undefined;
    }, 10_000, 'internal event');
    expect(conv.filter((e) => e.type.startsWith('task.')).map((e) => e.type)).toEqual(['task.started', 'task.stopping', 'task.finished', 'task.result', 'task.internal_event']);
    expect(convOfType(conv, 'task.stopping')[0]!.data).toEqual({ taskId: r.taskId, commandId: r.commandId, attempt: 1, reason: 'user', requestedBy: 'alice' });
    expect(await h.stopTask({ taskId: r.taskId })).toEqual({ ok: true, status: 'cancelled', attempt: 1 });
  });

  it('stop-task refuses a stale attempt (conflict) and hides other tenants’ tasks (not_found)', async () => {
    const r = await startRunning('stop-2');
    expect(await h.stopTask({ taskId: r.taskId, attempt: 2 })).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(await h.stopTask({ taskId: r.taskId, tenant: 'globex' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await h.stopTask({ taskId: 'no.such' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    expect(await h.stopTask({ taskId: '00000000-0000-8000-8000-000000000000' })).toMatchObject({ ok: false, error: { code: 'not_found' } });
    await sleep(200);
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStopRequested')).toHaveLength(0);
    expect(runner.signalsOf(r.commandId)).toHaveLength(0);
  });

  it('a stale generation refused by the runner surfaces as a conflict and is never recorded as signalled', async () => {
    const r = await startRunning('stop-stale');
    runner.reportAs.set(r.commandId, { epoch: 3, attempt: 7 });
    expect(await h.stopTask({ taskId: r.taskId })).toMatchObject({ ok: false, error: { code: 'conflict' } });
    await sleep(300);
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStopSignalled')).toHaveLength(0);
    expect(ofType(await h.taskEvents(r.taskId), 'TaskFinished')).toHaveLength(0);
    runner.reportAs.delete(r.commandId);
    await h.waitForTaskEvent(r.taskId, 'TaskStopSignalled'); // the sweep carries the stop out once the fence agrees
  });

  it('stop-all ends the epoch once, stops its tasks, refuses new work under it and never touches the next epoch', async () => {
    const a = await startRunning('all-a', { conversationId: 'conv-all' });
    const b = await startRunning('all-b', { conversationId: 'conv-all' });
    const other = await startRunning('all-other', { conversationId: 'conv-all-other' });
    const [first, second] = await Promise.all([h.stopAll({ conversationId: 'conv-all', epoch: 3 }), h.stopAll({ conversationId: 'conv-all', epoch: 3 })]);
    const winner = first.ok && first.stopping.length ? first : second;
    expect(winner).toEqual({ ok: true, epoch: 4, stopping: expect.arrayContaining([a.taskId, b.taskId]) });
    expect(first.ok && second.ok && first.epoch === 4 && second.epoch === 4).toBe(true);
    const ended = convOfType(await h.convEvents('conv-all'), 'epoch.ended');
    expect(ended).toHaveLength(1);
    expect(ended[0]!.data).toMatchObject({ epoch: 3, nextEpoch: 4, by: 'alice' });
    expect(ended[0]!.data.stoppedTasks).toEqual(expect.arrayContaining([{ taskId: a.taskId, attempt: 1 }, { taskId: b.taskId, attempt: 1 }]));

    // stop-all answers once the epoch's end is recorded; the stops go on in the background.
    for (const t of [a, b]) {
      await h.waitForTaskEvent(t.taskId, 'TaskStopSignalled');
      const req = ofType(await h.taskEvents(t.taskId), 'TaskStopRequested');
      expect(req.map((e) => e.data.reason)).toEqual(['stop_all']);
      expect(runner.signalsOf(t.commandId)[0]!.generation).toEqual({ epoch: 3, attempt: 1 });
    }
    expect(ofType(await h.taskEvents(other.taskId), 'TaskStopRequested')).toHaveLength(0);

    // Nothing new starts under the ended epoch; the new one works.
    expect(await h.startTask(startBody({ requestId: 'all-late', conversationId: 'conv-all', epoch: 3 }))).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect(await h.startTask(startBody({ requestId: 'all-a', conversationId: 'conv-all', epoch: 3 }))).toEqual(ok(await h.startTask(startBody({ requestId: 'all-a', conversationId: 'conv-all' }))));
    const next = await startRunning('all-next', { conversationId: 'conv-all', epoch: 4 });

    // A late or repeated stop-all for epoch 3 answers epoch 4 and touches nothing.
    expect(await h.stopAll({ conversationId: 'conv-all', epoch: 3 })).toEqual({ ok: true, epoch: 4, stopping: [] });
    expect(await h.stopAll({ conversationId: 'conv-all', epoch: 9 })).toMatchObject({ ok: false, error: { code: 'conflict' } });
    await sleep(400);
    expect(convOfType(await h.convEvents('conv-all'), 'epoch.ended')).toHaveLength(1);
    expect(ofType(await h.taskEvents(next.taskId), 'TaskStopRequested')).toHaveLength(0);
    expect(runner.signalsOf(next.commandId)).toHaveLength(0);

    // The stopped tasks end cancelled once their exits are proven.
    for (const t of [a, b]) await h.appendCommandEvents(t.commandId, exited(t, 1, { exitCode: null, signal: 'SIGTERM', reason: 'stopped' }), `ingest:${t.commandId}`);
    for (const t of [a, b]) expect((await h.waitForTaskEvent(t.taskId, 'TaskFinished')).data.status).toBe('cancelled');

    // Ending epoch 4 touches the epoch-4 task only.
    expect(await h.stopAll({ conversationId: 'conv-all', epoch: 4 })).toEqual({ ok: true, epoch: 5, stopping: [next.taskId] });
  });

  it('a task of an epoch ended since it started (a start racing stop-all) is stopped by the epoch sweep; one registered but not started never starts', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'race-1', conversationId: 'conv-race' })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    // The conversation moved on to epoch 5 (as another coordinator's stop-all would have recorded it).
    await h.pool.query(`INSERT INTO conversation_epochs (conversation_id, epoch, ended_seq) VALUES ('conv-race', 5, 0)`);
    const req = await h.waitForTaskEvent(r.taskId, 'TaskStopRequested');
    expect(req.data).toMatchObject({ reason: 'stop_all', epoch: 3 });
    await h.waitForTaskEvent(r.taskId, 'TaskStopSignalled');

    const late = ok(await h.startTask(startBody({ requestId: 'race-2', conversationId: 'conv-race', epoch: 5 })));
    await h.waitForTaskEvent(late.taskId, 'TaskStarted');
    await sleep(300);
    expect(ofType(await h.taskEvents(late.taskId), 'TaskStopRequested')).toHaveLength(0);

    // A registration that slipped past start-task's epoch check (as a racing instance's would): dispatch refuses it.
    const at = h.clock.now().toISOString();
    const registered: TaskEvent = {
      type: 'TaskRegistered',
      data: { ...startBody({ requestId: 'x', conversationId: 'conv-race' }), input: undefined, taskId: 'race-3', commandId: 'race-3-c1', command: 'sleep 9', cwd: '', env: {}, attempt: 1, foregroundWindowMs: 300, timeoutMs: 60_000, registeredAt: at } as never,
      metadata: { at },
    };
    await h.store.append(h.t.task('race-3'), [registered], { expectedLastSeq: 0, msgId: 'race-3' });
    const fin = await h.waitForTaskEvent('race-3', 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'cancelled', exitCode: null, outputBytes: 0 });
    expect((await h.taskEvents('race-3')).map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStopRequested', 'TaskFinished']);
    expect(runner.execsOf('race-3-c1')).toHaveLength(0);
  });

  it('the deadline stops a running task (reason deadline) and it ends timed_out; a timer survives a restart', async () => {
    const r = await startRunning('deadline-1', { conversationId: 'conv-dl', timeoutMs: 60_000 });
    await waitFor(async () => (await status(r.taskId)) === 'running', 10_000, 'projected running');
    await sleep(300);
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStopRequested')).toHaveLength(0);
    await h.restart();
    h.clock.advance(60_000);
    const req = await h.waitForTaskEvent(r.taskId, 'TaskStopRequested');
    expect(req.data.reason).toBe('deadline');
    await h.waitForTaskEvent(r.taskId, 'TaskStopSignalled');
    expect(runner.signalsOf(r.commandId)[0]).toMatchObject({ reason: 'deadline', graceMs: 1234 });
    await h.appendCommandEvents(r.commandId, exited(r, 1, { exitCode: null, signal: 'SIGKILL', reason: 'stopped' }), `ingest:${r.commandId}`);
    expect((await h.waitForTaskEvent(r.taskId, 'TaskFinished')).data).toMatchObject({ status: 'timed_out', signal: 'SIGKILL' });
    const notice = await waitFor(async () => convOfType(await h.convEvents('conv-dl'), 'task.finished')[0], 10_000, 'task.finished');
    expect(notice.data).toMatchObject({ status: 'timed_out' });
  });
});

describe('stops and retries before any runner took the task', () => {
  let h: Harness;
  let late: RunnerDouble | undefined;
  beforeAll(async () => {
    h = await harness('nostart', { RETRY_MAX_ATTEMPTS: '2' }, { dispatchMaxDeliver: 3 });
  });
  afterAll(async () => {
    await late?.stop();
    await h?.close();
  });

  it('a task stopped before any runner took it ends cancelled without having run, and is not retried', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'early-stop', conversationId: 'conv-early' })));
    expect(await h.stopTask({ taskId: r.taskId })).toEqual({ ok: true, status: 'stopping', attempt: 1 });
    const fin = await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'cancelled', attempt: 1, exitCode: null, resultState: 'unavailable', outputBytes: 0 });
    await sleep(1500); // the dispatch's redeliveries find it finished
    expect((await h.taskEvents(r.taskId)).map((e) => e.type)).toEqual(['TaskRegistered', 'TaskStopRequested', 'TaskFinished']);
    await waitFor(async () => convOfType(await h.convEvents('conv-early'), 'task.internal_event').length === 1, 10_000, 'one internal event');
  });

  it('a start that failed for a transient reason (no runner) is retried as attempt 2 under the same task id', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'retry-start', conversationId: 'conv-retry' })));
    const retried = await h.waitForTaskEvent(r.taskId, 'TaskRetried');
    late = await RunnerDouble.start(h.nats, h.t, h.clock, 'late-runner');
    expect(retried.data).toMatchObject({ taskId: r.taskId, previousCommandId: r.commandId, previousAttempt: 1, attempt: 2, reason: 'start failed: no runner available' });
    expect(retried.data.commandId).not.toBe(r.commandId);
    const started = await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    expect(started.data).toMatchObject({ attempt: 2, commandId: retried.data.commandId, runnerId: 'late-runner' });
    expect(late.execsOf(retried.data.commandId)[0]!.generation).toEqual({ epoch: 3, attempt: 2 });
    expect(late.execsOf(r.commandId)).toHaveLength(0);
    await waitFor(async () => (await h.pool.query('SELECT attempt, command_id, status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.attempt === 2, 10_000, 'projected attempt 2');
    const row = (await h.pool.query('SELECT attempt, command_id, status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0];
    expect(row).toEqual({ attempt: 2, command_id: retried.data.commandId, status: 'running' });
    // No completion for the abandoned attempt: nothing woke the conversation.
    expect(convOfType(await h.convEvents('conv-retry'), 'task.internal_event')).toHaveLength(0);
    expect(await h.stopTask({ taskId: r.taskId, attempt: 1 })).toMatchObject({ ok: false, error: { code: 'conflict' } });
  });
});

/** A clock whose wall time can jump while monotonic time does not (an NTP step, a resumed VM). */
class JumpClock {
  private wall = Date.parse('2026-01-01T00:00:00.000Z');
  private mono = 0;
  now = () => new Date(this.wall);
  monotonicMs = () => this.mono;
  advance(ms: number) {
    this.wall += ms;
    this.mono += ms;
  }
  jumpWall(ms: number) {
    this.wall += ms;
  }
}

describe('deadlines under a wall-clock jump', () => {
  let h: Awaited<ReturnType<typeof harness<JumpClock>>>;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('jump', {}, {}, () => new JumpClock());
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
  });

  it('measures elapsed time monotonically: a wall clock jumping 2 h ahead fires no deadline early', async () => {
    const r = ok(await h.startTask(startBody({ requestId: 'jump-1', timeoutMs: 60_000 })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    await waitFor(async () => (await h.pool.query('SELECT status FROM tasks WHERE task_id = $1', [r.taskId])).rows[0]?.status === 'running', 10_000, 'projected running');
    await sleep(300); // the deadline sweep has seen it running
    h.clock.jumpWall(2 * 3_600_000);
    await sleep(500);
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStopRequested')).toHaveLength(0);
    h.clock.advance(59_000);
    await sleep(300);
    expect(ofType(await h.taskEvents(r.taskId), 'TaskStopRequested')).toHaveLength(0);
    h.clock.advance(1_000);
    expect((await h.waitForTaskEvent(r.taskId, 'TaskStopRequested')).data.reason).toBe('deadline');
  });
});
