import type { StartTaskReply } from '@handplane/contracts';
import type { SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { createLogger } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { startCoordinator, type RunningCoordinator } from '../src/service';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const count = (events: TaskEvent[], type: TaskEvent['type']) => events.filter((e) => e.type === type).length;

describe('two coordinators at once share the work, and no task is handled twice', () => {
  let h: Harness;
  let second: RunningCoordinator | undefined;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('scale');
    second = await startCoordinator(h.config, {
      clock: h.clock,
      logger: createLogger('task-coordinator-2', h.config.LOG_LEVEL),
      foregroundSweepMs: 50,
      outboxSweepMs: 200,
      stopSweepMs: 100,
      abandonStartAfterMs: 0,
    });
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    await second?.stop();
    await runner?.stop();
    await h?.close();
  });

  it('starts, stops and settles 30 tasks exactly once each across both instances, also after one of them goes away', async () => {
    const tasks = await Promise.all(Array.from({ length: 30 }, (_, i) => h.startTask(startBody({ requestId: `scale-${i}`, conversationId: `conv-scale-${i % 3}` })).then(ok)));
    for (const t of tasks) await h.waitForTaskEvent(t.taskId, 'TaskStarted');
    // Both instances answer stop requests and both sweep the stops owed.
    const stopped = tasks.filter((_, i) => i % 2 === 0);
    const replies = await Promise.all(stopped.map((t) => h.stopTask({ taskId: t.taskId })));
    expect(replies.every((r) => r.ok && r.status === 'stopping')).toBe(true);
    for (const t of stopped) await h.waitForTaskEvent(t.taskId, 'TaskStopSignalled');

    // One instance goes away; the other settles everything.
    await second!.stop();
    second = undefined;
    const at = '2026-01-01T00:00:05.000Z';
    for (const [i, t] of tasks.entries()) {
      const ids = { commandId: t.commandId, taskId: t.taskId, attempt: 1 };
      const exit = i % 2 === 0 ? { exitCode: null, signal: 'SIGTERM', reason: 'stopped' } : { exitCode: 0, signal: null, reason: '' };
      const events: SandboxCommandEvent[] = [
        { type: 'CommandExited', data: { ...ids, runnerId: runner.runnerId, ...exit, endOffset: 1, startedAt: at, finishedAt: at }, metadata: { at } },
        { type: 'CommandResultReadable', data: { ...ids, outputBytes: 1 }, metadata: { at } },
      ];
      await h.appendCommandEvents(t.commandId, events, `ingest:${t.commandId}`);
    }
    for (const t of tasks) await h.waitForTaskEvent(t.taskId, 'TaskFinished');
    const internal = await waitFor(async () => {
      const all = (await Promise.all([0, 1, 2].map((c) => h.convEvents(`conv-scale-${c}`)))).flat().filter((e) => e.type === 'task.internal_event');
      return all.length >= 30 ? all : undefined;
    }, 15_000, '30 internal events');
    expect(new Set(internal.map((e) => (e.data as { taskId: string }).taskId)).size).toBe(30);
    expect(internal).toHaveLength(30);

    for (const [i, t] of tasks.entries()) {
      const events = await h.taskEvents(t.taskId);
      expect({ task: i, registered: count(events, 'TaskRegistered'), started: count(events, 'TaskStarted'), finished: count(events, 'TaskFinished') }).toEqual({ task: i, registered: 1, started: 1, finished: 1 });
      expect(runner.execsOf(t.commandId)).toHaveLength(1);
      if (i % 2 === 0) {
        expect([count(events, 'TaskStopRequested'), count(events, 'TaskStopSignalled')]).toEqual([1, 1]);
        expect(runner.signalsOf(t.commandId)).toHaveLength(1);
        expect(events.find((e) => e.type === 'TaskFinished')!.data).toMatchObject({ status: 'cancelled' });
      } else {
        expect(runner.signalsOf(t.commandId)).toHaveLength(0);
      }
    }
  });
});
