import { waitFor } from '@handplane/testing';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

/** A run interrupted in the middle of a tool call goes on from its checkpoint on another instance. */
describe('agent runtime resume (real NATS + Postgres)', () => {
  let h: Harness;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const behaviour = (command: string): Behaviour => (command === 'slow' ? { kind: 'background', gate } : { kind: 'finish', exitCode: 0, output: 'ok\n' });

  beforeAll(async () => {
    h = await startHarness('resume', behaviour);
  }, 60_000);
  afterAll(async () => {
    release();
    await h?.stop();
  }, 60_000);

  it('resumes an interrupted exec on a new instance without starting a second task or repeating events', async () => {
    const conv = await h.conversation('conv-r');
    await h.say(conv, 'alice', '$ echo a\n$ slow');
    await h.waitForEvents(conv, (x) => ofType(x, 'tool.called').some((e) => (e.data.args as { command?: string }).command === 'slow'), 'the run to be inside exec(slow)');
    const before = ofType(await h.events(conv), 'run.started');

    // The instance goes away in the middle of the call; the checkpoint still holds the run.
    await h.restartRuntime(async () => {
      const cp = await h.pool.query(`SELECT state->'active'->>'runId' AS run FROM run_checkpoints WHERE conversation_id = $1`, [conv]);
      expect(cp.rows).toEqual([{ run: before[0]!.data.runId }]);
    });
    release();
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length >= 1, 'the resumed run to finish');
    await h.settled();
    const es = await h.events(conv);

    expect(ofType(es, 'run.started')).toHaveLength(1);
    expect(ofType(es, 'run.finished').map((e) => e.data)).toEqual([{ runId: before[0]!.data.runId, outcome: 'waiting' }]);
    expect([...h.fake.tasks.values()].map((t) => t.req.input.command)).toEqual(['echo a', 'slow']);
    const called = ofType(es, 'tool.called').map((e) => e.data.callId);
    expect(new Set(called).size).toBe(called.length);
    expect(ofType(es, 'tool.result').map((e) => e.data.callId)).toEqual(called);
    const slow = h.fake.taskOf('slow')!;
    expect(ofType(es, 'wait.declared').map((e) => e.data.taskIds)).toEqual([[slow.taskId]]);
    await waitFor(async () => (await h.pool.query(`SELECT 1 FROM run_leases`)).rowCount === 0, 5000, 'the lease to be released');
  });
});
