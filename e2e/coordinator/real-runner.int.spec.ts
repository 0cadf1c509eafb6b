import type { StartTaskReply } from '@handplane/contracts';
import type { ConversationEvent, TaskEvent } from '@handplane/domain';
import { createLogger } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { startCoordinator, type RunningCoordinator } from '../../services/task-coordinator/src/service';
import { startBody } from '../../services/task-coordinator/test/harness';
import { realStack, type RealStack } from './real-stack';

type Ok = Extract<StartTaskReply, { ok: true }>;
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const types = (events: TaskEvent[]) => events.map((e) => e.type);
const internals = (events: ConversationEvent[]) => events.filter((e) => e.type === 'task.internal_event');

describe('stops, escalation, deadlines and stop-all against the real runner and log-ingestor', () => {
  let s: RealStack;
  let coordinator: RunningCoordinator;
  beforeAll(async () => {
    s = await realStack('realstop', { STOP_GRACE_MS: '700', FOREGROUND_WINDOW_MS: '60000' });
    coordinator = await startCoordinator(s.config, { logger: createLogger('task-coordinator', s.config.LOG_LEVEL), stopSweepMs: 200 });
  });
  afterAll(async () => {
    await coordinator?.stop();
    await s?.close();
  });

  /** Starts a command and waits until it printed `ready` (its traps are in place). */
  const startReady = async (requestId: string, command: string, over: Partial<Parameters<typeof startBody>[0]> = {}) => {
    const r = ok(await s.startTask(startBody({ requestId, command, ...over })));
    await s.waitForTaskEvent(r.taskId, 'TaskStarted');
    await waitFor(async () => (await s.pool.query(`SELECT committed_offset FROM ingest_cursors WHERE command_id = $1`, [r.commandId])).rows[0]?.committed_offset > 0, 15_000, `${requestId} ready`);
    return r;
  };

  it('stop-task: SIGTERM to the group, stopping until the exit is proven, then cancelled', async () => {
    const r = await startReady('real-stop', 'echo ready; sleep 30', { conversationId: 'conv-real' });
    expect(await s.stopTask({ taskId: r.taskId, attempt: 1 })).toEqual({ ok: true, status: 'stopping', attempt: 1 });
    const fin = await s.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'cancelled', signal: 'SIGTERM', exitCode: null, resultState: 'readable', outputBytes: 6 });
    expect(types(await s.taskEvents(r.taskId))).toEqual(['TaskRegistered', 'TaskStarted', 'TaskStopRequested', 'TaskStopSignalled', 'TaskFinished']);
    const exited = (await s.cmdEvents(r.commandId)).find((e) => e.type === 'CommandExited')!;
    expect(exited.data).toMatchObject({ signal: 'SIGTERM', reason: 'stopped' });
    await waitFor(async () => internals(await s.convEvents('conv-real')).length === 1, 10_000, 'one internal event');
  });

  it('escalates to SIGKILL after the grace when the command ignores SIGTERM', async () => {
    const r = await startReady('real-kill', `trap '' TERM; echo ready; while true; do sleep 0.1; done`);
    await s.stopTask({ taskId: r.taskId });
    const fin = await s.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'cancelled', signal: 'SIGKILL', exitCode: null });
  });

  it('the deadline (per-command timeoutMs) stops the task and it ends timed_out', async () => {
    const r = ok(await s.startTask(startBody({ requestId: 'real-deadline', command: 'sleep 30', timeoutMs: 1500, conversationId: 'conv-real-dl' })));
    const req = await s.waitForTaskEvent(r.taskId, 'TaskStopRequested');
    expect(req.data.reason).toBe('deadline');
    const fin = await s.waitForTaskEvent(r.taskId, 'TaskFinished');
    expect(fin.data).toMatchObject({ status: 'timed_out', signal: 'SIGTERM' });
    const exited = (await s.cmdEvents(r.commandId)).find((e) => e.type === 'CommandExited')!;
    expect(exited.data.reason).toBe('stopped'); // the coordinator's stop, not the runner's backstop
  });

  it('stop-all stops the epoch’s commands; the next epoch runs to completion', async () => {
    const a = await startReady('real-all-a', 'echo ready; sleep 30', { conversationId: 'conv-real-all' });
    const b = await startReady('real-all-b', 'echo ready; sleep 30', { conversationId: 'conv-real-all' });
    const reply = await s.stopAll({ conversationId: 'conv-real-all', epoch: 3 });
    expect(reply).toEqual({ ok: true, epoch: 4, stopping: expect.arrayContaining([a.taskId, b.taskId]) });
    for (const t of [a, b]) expect((await s.waitForTaskEvent(t.taskId, 'TaskFinished')).data).toMatchObject({ status: 'cancelled', signal: 'SIGTERM' });
    expect(await s.startTask(startBody({ requestId: 'real-all-late', conversationId: 'conv-real-all', epoch: 3 }))).toMatchObject({ ok: false, error: { code: 'conflict' } });
    const next = ok(await s.startTask(startBody({ requestId: 'real-all-next', command: 'echo next', conversationId: 'conv-real-all', epoch: 4 })));
    expect((await s.waitForTaskEvent(next.taskId, 'TaskFinished')).data).toMatchObject({ status: 'succeeded', exitCode: 0, outputBytes: 5 });
    expect(await s.stopAll({ conversationId: 'conv-real-all', epoch: 3 })).toEqual({ ok: true, epoch: 4, stopping: [] });
  });
});
