import type { Todo } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

/**
 * The runtime against the real NATS and Postgres, with the coordinator played by a fake that
 * appends real task events, stores output in `command_log` and publishes internal task events.
 */
describe('agent runtime (real NATS + Postgres)', () => {
  let h: Harness;
  let releaseHold!: () => void;
  const hold = new Promise<void>((r) => (releaseHold = r));

  const behaviour = (command: string): Behaviour => {
    if (command === 'hold') return { kind: 'background', gate: hold };
    if (command.startsWith('sleep')) return { kind: 'background' };
    return { kind: 'finish', exitCode: 0, output: `${command.replace(/^echo /, '')}\n` };
  };

  beforeAll(async () => {
    h = await startHarness('rt', behaviour, {
      'bad-wait': [
        () => ({ toolCalls: [{ callId: 'call-1', name: 'exec', args: { command: 'echo done' } }] }),
        (since) => {
          const done = since.find((e) => e.kind === 'tool_result') as { result: { taskId: string } };
          const todos: Todo[] = [{ id: 'w1', content: 'wait', status: 'in_progress', taskIds: [] }];
          return { toolCalls: [{ callId: 'call-2', name: 'write_todos', args: { todos, wait_for_tasks: ['nope', done.result.taskId] } }] };
        },
      ],
      'fake-complete': [
        () => ({ toolCalls: [{ callId: 'call-1', name: 'write_todos', args: { todos: [{ id: 'x', content: 'long job', status: 'in_progress' }] } }] }),
        () => ({ toolCalls: [{ callId: 'call-2', name: 'exec', args: { command: 'sleep 300' } }] }),
        () => ({ toolCalls: [{ callId: 'call-3', name: 'write_todos', args: { todos: [{ id: 'x', content: 'long job', status: 'completed' }] } }] }),
      ],
    });
  }, 60_000);
  afterAll(async () => {
    releaseHold();
    await h?.stop();
  }, 60_000);

  it('answers /healthz and /readyz', async () => {
    const base = `http://127.0.0.1:${h.httpPort()}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: { name: string; ok: boolean }[] }).checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok])).toEqual([
      ['nats', true],
      ['postgres', true],
    ]);
  });

  it('waits on a background command, then wakes exactly once as the originating user and completes', async () => {
    const conv = await h.conversation('conv1');
    const messageId = await h.say(conv, 'alice', '$ echo one\n$ sleep 100');
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length >= 1, 'the first run to finish');
    await h.settled();
    let es = await h.events(conv);
    // The completion of the task that finished in the window was read by the run: it wakes nobody.
    expect(ofType(es, 'run.started')).toHaveLength(1);
    const [first] = ofType(es, 'run.started');
    expect(first!.data).toEqual({ runId: expect.any(String), userId: 'alice', trigger: 'message', messageId });
    expect(ofType(es, 'run.finished')[0]!.data).toEqual({ runId: first!.data.runId, outcome: 'waiting' });
    const t1 = h.fake.taskOf('echo one')!;
    const t2 = h.fake.taskOf('sleep 100')!;
    expect(t1.req).toMatchObject({ origin: 'agent', runId: first!.data.runId, userId: 'alice', tenant: 'acme', requestId: `${first!.data.runId}:call-2` });
    expect(ofType(es, 'wait.declared').map((e) => e.data.taskIds)).toEqual([[t2.taskId]]);
    const execResults = ofType(es, 'tool.result').filter((e) => e.data.name === 'exec');
    expect(execResults.map((e) => e.data.result)).toEqual([
      { taskId: t1.taskId, commandId: t1.commandId, status: 'succeeded', exitCode: 0, signal: null, output: 'one\n', outputBytes: 4, truncated: false },
      { taskId: t2.taskId, commandId: t2.commandId, status: 'running_in_background', attempt: 1 },
    ]);
    // Each tool call is announced and answered once.
    expect(ofType(es, 'tool.called').map((e) => e.data.callId)).toEqual(ofType(es, 'tool.result').map((e) => e.data.callId));
    expect((await h.pool.query(`SELECT consumed_by_run FROM wakeups WHERE task_id = $1`, [t1.taskId])).rows).toEqual([{ consumed_by_run: first!.data.runId }]);

    await h.fake.finish(t2.taskId, 3, 'two\n', 'notify-a');
    await h.fake.publishInternal(t2.taskId, 'notify-b'); // the same completion again, past the msg-id dedupe
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length >= 2, 'the woken run to finish');
    await h.settled();
    es = await h.events(conv);

    const runs = ofType(es, 'run.started');
    expect(runs).toHaveLength(2);
    expect(runs[1]!.data).toEqual({ runId: expect.any(String), userId: 'alice', trigger: 'task_event', taskId: t2.taskId });
    expect(ofType(es, 'run.finished')[1]!.data).toEqual({ runId: runs[1]!.data.runId, outcome: 'completed' });
    const read = ofType(es, 'tool.result').find((e) => e.data.name === 'read_output')!;
    expect(read.data.result).toMatchObject({ taskId: t2.taskId, text: 'two\n', offset: 0, nextOffset: 4, status: 'failed', exitCode: 3, eof: true });
    const lastTodos = ofType(es, 'todos.updated').pop()!.data;
    expect(lastTodos.todos.map((t) => [t.status, t.taskIds])).toEqual([
      ['completed', [t1.taskId]],
      ['completed', [t2.taskId]],
    ]);
    expect(lastTodos.waitForTasks).toEqual([]);
    expect(ofType(es, 'assistant.message').pop()!.data.text).toBe('`echo one` → exit 0\n`sleep 100` → exit 3');
    expect(ofType(es, 'guard.rejected')).toEqual([]);
    // Published events are not kept for a later resume to publish again.
    const cp = await h.pool.query(`SELECT state->'outbox' AS outbox, state->'active' AS active, state->'conv'->>'status' AS status FROM run_checkpoints WHERE conversation_id = $1`, [conv]);
    expect(cp.rows).toEqual([{ outbox: [], active: null, status: 'idle' }]);
  });

  it('queues a completion that arrives while another run is active and runs it afterwards', async () => {
    const conv = await h.conversation('conv2');
    await h.say(conv, 'alice', '$ sleep 200');
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').some((e) => e.data.outcome === 'waiting'), 'alice’s run to wait');
    const ta = h.fake.taskOf('sleep 200')!;

    await h.say(conv, 'bob', '$ hold');
    await h.waitForEvents(conv, (x) => ofType(x, 'tool.called').some((e) => (e.data.args as { command?: string }).command === 'hold'), 'bob’s run to be inside exec');
    await h.fake.finish(ta.taskId, 0, 'slept\n');
    await waitFor(async () => (await h.pool.query(`SELECT 1 FROM wakeups WHERE task_id = $1 AND consumed_by_run IS NULL`, [ta.taskId])).rowCount === 1, 10_000, 'the wake-up to be queued');
    let es = await h.events(conv);
    expect(ofType(es, 'run.started').map((e) => e.data.trigger)).toEqual(['message', 'message']);

    releaseHold();
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length >= 3, 'the queued wake-up to run');
    await h.settled();
    es = await h.events(conv);
    const started = ofType(es, 'run.started');
    expect(started.map((e) => [e.data.trigger, e.data.userId])).toEqual([
      ['message', 'alice'],
      ['message', 'bob'],
      ['task_event', 'alice'],
    ]);
    expect(started[2]!.data.taskId).toBe(ta.taskId);
    const bobFinished = ofType(es, 'run.finished').find((e) => e.data.runId === started[1]!.data.runId)!;
    expect(bobFinished.data.outcome).toBe('waiting');
    expect(bobFinished.seq).toBeLessThan(started[2]!.seq);
  });

  it('rejects write_todos whose wait names an unknown or finished task, as a whole (G5)', async () => {
    const conv = await h.conversation('conv3');
    await h.say(conv, 'alice', 'test:bad-wait');
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length >= 1, 'the run to finish');
    await h.settled();
    const es = await h.events(conv);
    expect(ofType(es, 'run.started')).toHaveLength(1);
    const done = h.fake.taskOf('echo done')!;
    const rejected = ofType(es, 'guard.rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]!.data.rule).toBe('G5');
    expect(rejected[0]!.data.detail).toMatch(/nope: unknown task/);
    expect(rejected[0]!.data.detail).toContain(`${done.taskId}: already finished`);
    const result = ofType(es, 'tool.result').find((e) => e.data.callId === 'call-2')!;
    expect(result.data.ok).toBe(false);
    expect(ofType(es, 'todos.updated')).toEqual([]);
    expect(ofType(es, 'wait.declared')).toEqual([]);
    expect(ofType(es, 'run.finished')[0]!.data.outcome).toBe('completed');
  });

  it('refuses to complete a todo bound to a task that is still running (G4)', async () => {
    const conv = await h.conversation('conv4');
    await h.say(conv, 'alice', 'test:fake-complete');
    await h.waitForEvents(conv, (x) => ofType(x, 'run.finished').length >= 1, 'the run to finish');
    const es = await h.events(conv);
    const task = h.fake.taskOf('sleep 300')!;
    const rejected = ofType(es, 'guard.rejected');
    // Changed on purpose: the script then stops with the todo unfinished and no wait, so the suspension
    // guard (G6) forces two more turns and finally asks the user instead of letting the run complete.
    expect(rejected.map((e) => e.data.rule)).toEqual(['G4', 'G6', 'G6', 'G6']);
    expect(ofType(es, 'question.asked')).toHaveLength(1);
    expect(ofType(es, 'run.finished').map((e) => e.data.outcome)).toEqual(['waiting']);
    expect(rejected[0]!.data.detail).toContain(`its task ${task.taskId} has not finished`);
    const result = ofType(es, 'tool.result').find((e) => e.data.callId === 'call-3')!;
    expect(result.data).toMatchObject({ ok: false, result: { error: { code: 'guard_rejected', rule: 'G4', message: expect.stringContaining('wait_for_tasks') } } });
    const todos = ofType(es, 'todos.updated').map((e) => e.data.todos);
    expect(todos).toEqual([
      [{ id: 'x', content: 'long job', status: 'in_progress', taskIds: [] }],
      [{ id: 'x', content: 'long job', status: 'in_progress', taskIds: [task.taskId] }],
    ]);
  });
});
