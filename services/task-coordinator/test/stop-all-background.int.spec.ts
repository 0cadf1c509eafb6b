import type { ConversationEvent } from '@handplane/domain';
import type { StartTaskReply } from '@handplane/contracts';
import { waitFor } from '@handplane/testing';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r)}`);
  return r;
};

describe('stop-all answers before its tasks are signalled (real NATS and Postgres, gRPC runner double)', () => {
  let h: Harness;
  let runner: RunnerDouble;
  let release: () => void = () => undefined;
  beforeAll(async () => {
    // A runner call may take a minute here: a stop-all that waited for the signals would outlast the RPC wait (15 s).
    h = await harness('stopallbg', {}, { runnerCallTimeoutMs: 60_000 });
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    release();
    await runner?.stop();
    await h?.close();
  });

  it('ends the epoch and answers while the runner has not acknowledged one signal; the stops are carried out after', async () => {
    const tasks: Ok[] = [];
    for (let i = 0; i < 6; i++) {
      const r = ok(await h.startTask(startBody({ requestId: `bg-${i}`, conversationId: 'conv-bg' })));
      await h.waitForTaskEvent(r.taskId, 'TaskStarted');
      tasks.push(r);
    }
    // The runner takes every Signal but answers none until released.
    runner.holdSignals = new Promise<void>((r) => (release = r));

    const reply = await h.stopAll({ conversationId: 'conv-bg', epoch: 3 });
    expect(reply).toEqual({ ok: true, epoch: 4, stopping: expect.arrayContaining(tasks.map((t) => t.taskId)) });
    expect(reply.ok && reply.stopping).toHaveLength(6);
    const ended = (await h.convEvents('conv-bg')).filter((e): e is Extract<ConversationEvent, { type: 'epoch.ended' }> => e.type === 'epoch.ended');
    expect(ended.map((e) => e.data.stoppedTaskIds.length)).toEqual([6]);
    // Nothing is signalled yet: the runner holds the calls.
    for (const t of tasks) expect((await h.taskEvents(t.taskId)).some((e) => e.type === 'TaskStopSignalled')).toBe(false);
    // The epoch is over at once: nothing new starts under it.
    expect(await h.startTask(startBody({ requestId: 'bg-late', conversationId: 'conv-bg', epoch: 3 }))).toMatchObject({ ok: false, error: { code: 'conflict' } });

    // The stops go on after the answer: signals reach the runner (held there), then it answers them all.
    await waitFor(() => tasks.some((t) => runner.signalsOf(t.commandId).length > 0), 60_000, 'a signal at the runner');
    release();
    for (const t of tasks) {
      const signalled = await h.waitForTaskEvent(t.taskId, 'TaskStopSignalled', 60_000);
      expect(signalled.data).toMatchObject({ attempt: 1 });
      expect((await h.taskEvents(t.taskId)).find((e) => e.type === 'TaskStopRequested')?.data).toMatchObject({ reason: 'stop_all' });
      expect(runner.signalsOf(t.commandId)[0]!.generation).toEqual({ epoch: 3, attempt: 1 });
    }
  });
});
