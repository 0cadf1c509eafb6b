import { conversationRunDecider as decider, type ConversationEvent, type EpochEnded } from '@handplane/domain';
import { EventStore } from '@handplane/platform';
import { emptyCheckpoint, type Checkpoint } from '../src/app/run/checkpoint';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Stop-all as the runtime sees it: the coordinator's `epoch.ended` on the conversation. */
describe('agent runtime: epoch.ended (stop-all) stops the run and ends the wait', () => {
  let h: Harness;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const behaviour = (command: string): Behaviour => (command.startsWith('sleep') || command === 'hold' ? { kind: 'background', ...(command === 'hold' ? { gate } : {}) } : { kind: 'finish', exitCode: 0, output: 'ok\n' });

  beforeAll(async () => {
    h = await startHarness('rtepoch', behaviour);
  }, 60_000);
  afterAll(async () => {
    release();
    await h?.stop();
  }, 60_000);

  const endEpoch = async (conversationId: string, stoppedTasks: { taskId: string; attempt: number }[]) => {
    const event: EpochEnded = {
      type: 'epoch.ended',
      data: { epoch: 1, nextEpoch: 2, stoppedTaskIds: stoppedTasks.map((t) => t.taskId), stoppedTasks, by: 'bob' },
      metadata: { at: new Date().toISOString(), actor: 'bob' },
    };
    await new EventStore(h.env.nats).publish(h.env.topology.conv(conversationId), event, `epoch-ended:${conversationId}:1`);
  };
  const runsOf = (es: ConversationEvent[], trigger: string) => ofType(es, 'run.started').filter((e) => e.data.trigger === trigger);

  it('ends a validated wait, and the stopped task’s completion wakes nobody', async () => {
    const conv = await h.conversation('conv-wait');
    // A conversation waiting on task t-wait (as a run that declared the wait and ended its turn leaves it).
    const at = new Date().toISOString();
    const history: ConversationEvent[] = [
      { type: 'run.started', data: { runId: 'run-w', userId: 'alice', trigger: 'message', messageId: 'm-w' }, metadata: { at } },
      { type: 'wait.declared', data: { runId: 'run-w', taskIds: ['t-wait'] }, metadata: { at } },
      { type: 'run.finished', data: { runId: 'run-w', outcome: 'waiting' }, metadata: { at } },
    ];
    const cp: Checkpoint = { ...emptyCheckpoint(), seq: 3, conv: history.reduce((st, e) => decider.evolve(st, e), decider.initialState()) };
    expect(cp.conv.status).toBe('waiting');
    await h.pool.query(`INSERT INTO run_checkpoints (conversation_id, run_id, state) VALUES ($1, NULL, $2)`, [conv, JSON.stringify(cp)]);

    await endEpoch(conv, [{ taskId: 't-wait', attempt: 1 }]);
    const es = await h.waitForEvents(conv, (x) => ofType(x, 'wait.invalidated').length > 0, 'wait.invalidated');
    expect(ofType(es, 'wait.invalidated').map((e) => e.data)).toEqual([{ reason: 'stop_all', taskIds: ['t-wait'] }]);
    const stored = (await h.pool.query(`SELECT state FROM run_checkpoints WHERE conversation_id = $1`, [conv])).rows[0].state as Checkpoint;
    expect(stored.conv.status).toBe('idle');

    // The stopped task's completion arrives: it wakes nobody.
    const internal: ConversationEvent = {
      type: 'task.internal_event',
      data: { taskId: 't-wait', commandId: 'c-wait', attempt: 1, userId: 'alice', origin: 'agent', status: 'cancelled', exitCode: null, signal: 'SIGTERM', resultState: 'readable', outputBytes: 0 },
      metadata: { at },
    };
    await new EventStore(h.env.nats).publish(h.env.topology.conv(conv), internal, 'internal:t-wait:1');
    await h.settled();
    await sleep(500);
    expect(runsOf(await h.events(conv), 'task_event')).toHaveLength(0);
    expect((await h.pool.query(`SELECT consumed_by_run FROM wakeups WHERE conversation_id = $1`, [conv])).rows).toEqual([{ consumed_by_run: 'epoch-ended:1' }]);
  });

  it('stops the active run at its last stored step; the step in flight is discarded', async () => {
    const conv = await h.conversation('conv-active');
    await h.say(conv, 'alice', '$ hold');
    const started = await h.waitForEvents(conv, (x) => ofType(x, 'tool.called').length > 0, 'the exec call');
    const runId = ofType(started, 'run.started')[0]!.data.runId;
    await endEpoch(conv, []);
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length > 0, 'run.finished');
    await sleep(3000); // the exec tool's foreground window ends; its checkpoint write is refused
    release(); // the fake coordinator's task goes on in the background (settled() waits for the fake too)
    await h.settled();
    const es = await h.events(conv);
    expect(ofType(es, 'run.finished').map((e) => e.data)).toEqual([{ runId, outcome: 'stopped', detail: 'stop-all ended epoch 1' }]);
    const afterStop = es.slice(es.findIndex((e) => e.type === 'run.finished'));
    expect(afterStop.filter((e) => 'runId' in e.data && (e.data as { runId?: string }).runId === runId).map((e) => e.type)).toEqual(['run.finished']);
  });
});
