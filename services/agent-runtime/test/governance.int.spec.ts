import { waitFor } from '@handplane/testing';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

/**
 * The governance rules through the whole runtime (real NATS and Postgres, the coordinator played
 * by a fake), driven by the scripted model's misbehaviour directives, questions and approvals.
 */
describe('agent runtime governance (real NATS + Postgres)', () => {
  let h: Harness;
  let releaseHold!: () => void;
  const hold = new Promise<void>((r) => (releaseHold = r));
  const behaviour = (command: string): Behaviour => {
    if (command === 'hold') return { kind: 'background', gate: hold };
    if (command.startsWith('sleep') || command.startsWith('build')) return { kind: 'background' };
    return { kind: 'finish', exitCode: 0, output: `${command}\n` };
  };
  const policy = JSON.stringify({ requireApproval: ['^rm '], autoApprove: ['^echo '] });

  beforeAll(async () => {
    h = await startHarness(
      'gov',
      behaviour,
      {
        stop: [
          () => ({ toolCalls: [{ callId: 'call-1', name: 'exec', args: { command: 'sleep 300' } }] }),
          (since) => {
            const started = since.find((e) => e.kind === 'tool_result') as { result: { taskId: string } };
            return { toolCalls: [{ callId: 'call-2', name: 'stop_task', args: { taskId: started.result.taskId } }, { callId: 'call-3', name: 'stop_task', args: { taskId: 'tnotmine' } }] };
          },
        ],
      },
      { runtimeConfig: { APPROVAL_POLICY: policy } },
    );
  }, 60_000);
  afterAll(async () => {
    releaseHold();
    await h?.stop();
  }, 60_000);

  const finished = (n: number) => (es: { type: string }[]) => es.filter((e) => e.type === 'run.finished').length >= n;

  it('blocks each misbehaviour of #idle, #detach, #fake-complete and #poll with guard.rejected; then the model behaves', async () => {
    const conv = await h.conversation('conv-bad');
    await h.say(conv, 'alice', '#idle\n#detach\n#fake-complete\n#poll\n$ build app');
    await h.waitForEvents(conv, finished(1), 'the run to suspend');
    await h.settled();
    let es = await h.events(conv);
    expect(ofType(es, 'guard.rejected').map((e) => e.data.rule)).toEqual(['G6', 'G2', 'G4', 'G3']);
    // Nothing that broke a rule ran: the host saw the real command only.
    expect([...h.fake.tasks.values()].map((t) => t.req.input.command)).toEqual(['build app']);
    const task = h.fake.taskOf('build app')!;
    expect(ofType(es, 'wait.declared').map((e) => e.data.taskIds)).toEqual([[task.taskId]]);
    expect(ofType(es, 'run.finished').map((e) => e.data.outcome)).toEqual(['waiting']);
    // The todo of the running task was never shown completed.
    expect(ofType(es, 'todos.updated').every((e) => e.data.todos.every((t) => t.status !== 'completed'))).toBe(true);

    await h.fake.finish(task.taskId, 0, 'built\n');
    await h.waitForEvents(conv, finished(2), 'the woken run');
    await h.settled();
    es = await h.events(conv);
    expect(ofType(es, 'run.started').map((e) => [e.data.trigger, e.data.userId])).toEqual([
      ['message', 'alice'],
      ['task_event', 'alice'],
    ]);
    expect(ofType(es, 'assistant.message').pop()!.data.text).toBe('`build app` → exit 0');
    expect(ofType(es, 'guard.rejected')).toHaveLength(4);
  });

  it('a message during a run steers it; one during a wait invalidates the wait and starts a turn at once (G7)', async () => {
    const conv = await h.conversation('conv-steer');
    await h.say(conv, 'alice', '$ hold');
    await h.waitForEvents(conv, (x) => ofType(x, 'tool.called').some((e) => (e.data.args as { command?: string }).command === 'hold'), 'the run inside exec(hold)');
    await h.say(conv, 'bob', '$ build site');
    releaseHold();
    await h.waitForEvents(conv, finished(1), 'the steered run to finish');
    await h.settled();
    let es = await h.events(conv);
    const runs = ofType(es, 'run.started');
    expect(runs).toHaveLength(1); // bob's message went into alice's run
    const runId = runs[0]!.data.runId;
    expect(ofType(es, 'tool.called').filter((e) => e.data.runId === runId).map((e) => (e.data.args as { command?: string }).command ?? e.data.name)).toEqual(['write_todos', 'hold', 'write_todos', 'build site', 'write_todos']);
    expect((await h.pool.query(`SELECT consumed_by_run FROM inbox WHERE conversation_id = $1 ORDER BY seq`, [conv])).rows).toEqual([{ consumed_by_run: runId }, { consumed_by_run: runId }]);
    const site = h.fake.taskOf('build site')!;
    expect(ofType(es, 'run.finished')[0]!.data.outcome).toBe('waiting');

    await h.say(conv, 'carol', 'how is it going?');
    await h.waitForEvents(conv, finished(2), 'the run of carol’s message');
    await h.settled();
    es = await h.events(conv);
    const invalidated = ofType(es, 'wait.invalidated');
    expect(invalidated.map((e) => e.data)).toEqual([{ reason: 'message', taskIds: [site.taskId] }]);
    const carol = ofType(es, 'run.started')[1]!;
    expect(carol.data).toMatchObject({ trigger: 'message', userId: 'carol' });
    expect(invalidated[0]!.seq).toBeLessThan(carol.seq);
  });

  it('holds a completion back while a question is open (G10); the answer starts a turn first (G7)', async () => {
    const conv = await h.conversation('conv-ask');
    await h.say(conv, 'alice', '$ sleep 20');
    await h.waitForEvents(conv, finished(1), 'the first run to wait');
    const sleep = h.fake.taskOf('sleep 20')!;
    await h.say(conv, 'bob', '? deploy to staging or production?');
    const asked = await h.waitForEvents(conv, (x) => ofType(x, 'question.asked').length > 0 && finished(2)(x), 'the question');
    const question = ofType(asked, 'question.asked')[0]!.data;
    expect(question.text).toBe('deploy to staging or production?');
    expect(ofType(asked, 'run.finished')[1]!.data.outcome).toBe('waiting');

    await h.fake.finish(sleep.taskId, 0, 'slept\n');
    await waitFor(async () => (await h.pool.query(`SELECT 1 FROM wakeups WHERE task_id = $1 AND consumed_by_run IS NULL`, [sleep.taskId])).rowCount === 1, 10_000, 'the completion to be queued');
    await new Promise((r) => setTimeout(r, 1500)); // a sweep or two: nothing may start
    expect(ofType(await h.events(conv), 'run.started')).toHaveLength(2);

    await h.append(conv, { type: 'question.answered', data: { questionId: question.questionId, text: 'staging', by: 'carol' }, metadata: { at: new Date().toISOString(), actor: 'carol' } }, `answer:${question.questionId}`);
    await h.waitForEvents(conv, finished(3), 'the answer’s run');
    await h.settled();
    const es = await h.events(conv);
    const runs = ofType(es, 'run.started');
    expect(runs.map((e) => [e.data.trigger, e.data.userId])).toEqual([
      ['message', 'alice'],
      ['message', 'bob'],
      ['answer', 'carol'],
    ]);
    // The answer's turn read the finished task (its completion needs no run of its own) and completed alice's todo.
    expect((await h.pool.query(`SELECT consumed_by_run FROM wakeups WHERE task_id = $1`, [sleep.taskId])).rows).toEqual([{ consumed_by_run: runs[2]!.data.runId }]);
    expect(ofType(es, 'todos.updated').pop()!.data.todos.map((t) => [t.content, t.status])).toEqual([['Run `sleep 20`', 'completed']]);
    expect(ofType(es, 'assistant.message').find((e) => e.data.text.startsWith('? deploy'))!.data.text).toBe('? deploy to staging or production? → staging');
    expect(ofType(es, 'wait.invalidated').map((e) => e.data.reason)).toEqual(['message', 'answer']);
  });

  it('asks a person for a command the policy names; the approval runs it as the asking user, an automated approval just runs', async () => {
    const conv = await h.conversation('conv-approve');
    await h.say(conv, 'alice', '$ echo hello\n$ rm -rf build');
    await h.waitForEvents(conv, finished(1), 'the run to wait for the approval');
    await h.settled();
    let es = await h.events(conv);
    const requested = ofType(es, 'approval.requested');
    expect(requested.map((e) => e.data.command)).toEqual(['echo hello', 'rm -rf build']);
    expect(ofType(es, 'approval.resolved').map((e) => [e.data.approvalId, e.data.automated, e.data.by])).toEqual([[requested[0]!.data.approvalId, true, 'policy']]);
    expect(h.fake.taskOf('rm -rf build')).toBeUndefined();
    expect(ofType(es, 'run.finished')[0]!.data.outcome).toBe('waiting');

    const approvalId = requested[1]!.data.approvalId;
    await h.append(conv, { type: 'approval.resolved', data: { approvalId, decision: 'approve', by: 'bob', automated: false }, metadata: { at: new Date().toISOString(), actor: 'bob' } }, `approval:${approvalId}`);
    await h.waitForEvents(conv, finished(2), 'the approved run');
    await h.settled();
    es = await h.events(conv);
    const run = ofType(es, 'run.started')[1]!;
    expect(run.data).toMatchObject({ trigger: 'approval', userId: 'alice', approvalId });
    expect(h.fake.taskOf('rm -rf build')!.req).toMatchObject({ userId: 'alice', runId: run.data.runId });
    expect(ofType(es, 'assistant.message').pop()!.data.text).toBe('`echo hello` → exit 0\n`rm -rf build` → exit 0');
  });

  it('stop_task asks the coordinator to stop a task of the conversation, and refuses others', async () => {
    const conv = await h.conversation('conv-stop');
    await h.say(conv, 'alice', 'test:stop');
    await h.waitForEvents(conv, finished(1), 'the run to finish');
    const es = await h.events(conv);
    const task = h.fake.taskOf('sleep 300')!;
    const results = ofType(es, 'tool.result').filter((e) => e.data.name === 'stop_task');
    expect(results.map((e) => [e.data.ok, e.data.result])).toEqual([
      [true, { taskId: task.taskId, status: 'stopping', attempt: 1 }],
      [false, { error: { code: 'not_found', message: 'task tnotmine is not a task of this conversation' } }],
    ]);
    expect(h.fake.stops).toEqual([{ tenant: 'acme', userId: 'alice', taskId: task.taskId }]);
  });
});
