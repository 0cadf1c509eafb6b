import { validateTaskWaitRequestSchema, type ValidateTaskWaitRequest } from '@handplane/contracts';
import type { ConversationEvent, TaskConditionMet } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import type { TranscriptEntry } from '../src/app/model/transcript';
import type { Behaviour } from './fake-coordinator';
import { ofType, startHarness, type Harness } from './runtime-harness';

const taskOf = (since: readonly TranscriptEntry[]) => (since.find((e) => e.kind === 'tool_result' && e.name === 'exec') as { result: { taskId: string } }).result.taskId;

/**
 * Condition waits through the runtime (issue 10.1): `write_todos` carries the condition to the
 * coordinator's validation, and the coordinator's `task.condition_met` wakes the agent exactly once,
 * as the task's user, with the matching line in its transcript.
 */
describe('agent runtime: condition waits (real NATS + Postgres, fake coordinator)', () => {
  let h: Harness;
  const seen: ValidateTaskWaitRequest[] = [];
  const behaviour = (command: string): Behaviour => (command.startsWith('npm') ? { kind: 'background' } : { kind: 'finish', exitCode: 0, output: 'ok\n' });

  beforeAll(async () => {
    h = await startHarness('rtcond', behaviour, {
      devserver: [
        () => ({ toolCalls: [{ callId: 'c1', name: 'exec', args: { command: 'npm run dev' } }] }),
        (since) => ({ toolCalls: [{ callId: 'c2', name: 'write_todos', args: { todos: [], wait_for_tasks: [{ taskId: taskOf(since), until: { outputMatches: 'ready on \\d+' }, timeoutMs: 60000 }] } }] }),
        () => ({ toolCalls: [], text: 'waiting for the dev server' }),
        (since) => {
          const woke = since.find((e) => e.kind === 'task_condition');
          return { toolCalls: [], text: woke?.kind === 'task_condition' ? `woken: ${woke.outcome} ${JSON.stringify(woke.line)}` : 'no condition in the transcript' };
        },
      ],
    });
    // Watches the validation requests as they pass (the fake coordinator answers them).
    const sub = h.env.nats.nc.subscribe(h.env.topology.rpc.validateTaskWait);
    void (async () => {
      for await (const m of sub) seen.push(validateTaskWaitRequestSchema.parse(m.json()));
    })();
  }, 60_000);
  afterAll(() => h?.stop(), 60_000);

  it('declares the condition with the wait, and is woken once with the matching line', async () => {
    const conv = await h.conversation('conv-cond');
    await h.say(conv, 'alice', 'test:devserver');
    const waiting = await h.waitForEvents(conv, (es) => ofType(es, 'run.finished').some((e) => e.data.outcome === 'waiting'), 'the run to wait');
    const taskId = ofType(waiting, 'task.started')[0]?.data.taskId ?? ofType(waiting, 'wait.declared')[0]!.data.taskIds[0]!;
    const runId = ofType(waiting, 'run.started')[0]!.data.runId;
    await waitFor(async () => (seen.some((r) => r.conditions?.length) ? true : undefined), 10_000, 'validation with conditions');
    expect(seen.find((r) => r.conditions?.length)).toMatchObject({ conversationId: conv, taskIds: [taskId], runId, conditions: [{ taskId, until: { outputMatches: 'ready on \\d+' }, timeoutMs: 60000 }] });

    const met: TaskConditionMet = {
      type: 'task.condition_met',
      data: { conditionId: 'cond-1', taskId, commandId: 'c-x', attempt: 1, userId: 'alice', runId, until: { outputMatches: 'ready on \\d+' }, outcome: 'matched', line: 'ready on 5173', offset: 10, detail: 'matched' },
      metadata: { at: new Date().toISOString(), actor: 'alice' },
    };
    await h.append(conv, met, 'condition:cond-1');
    // Published again past the duplicate window (another message id): still one wake-up.
    await h.append(conv, met, 'condition:cond-1:again');
    const es = await h.waitForEvents(conv, (x) => ofType(x, 'assistant.message').some((e) => e.data.text.startsWith('woken')), 'the wake-up');
    await h.settled();
    const after: ConversationEvent[] = await h.events(conv);
    const wakes = ofType(after, 'run.started').filter((e) => e.data.trigger === 'task_event');
    expect(wakes.map((e) => ({ userId: e.data.userId, taskId: e.data.taskId }))).toEqual([{ userId: 'alice', taskId }]);
    expect(ofType(es, 'assistant.message').map((e) => e.data.text)).toContain('woken: matched "ready on 5173"');
  });

  it('the scripted model’s `~` line: waits on the condition, runs the next command while the first runs, then waits for its exit', async () => {
    const conv = await h.conversation('conv-tilde');
    await h.say(conv, 'alice', '$ npm run serve\n~ output ^ready\n$ echo after');
    const waiting = await h.waitForEvents(conv, (es) => ofType(es, 'run.finished').some((e) => e.data.outcome === 'waiting'), 'the run to wait on the condition');
    const taskId = ofType(waiting, 'task.backgrounded')[0]?.data.taskId ?? ofType(waiting, 'wait.declared')[0]!.data.taskIds[0]!;
    const runId = ofType(waiting, 'run.started')[0]!.data.runId;
    await waitFor(async () => (seen.some((r) => r.runId === runId && r.conditions?.length) ? true : undefined), 10_000, 'validation with the condition');
    expect(seen.find((r) => r.runId === runId && r.conditions?.length)!.conditions).toEqual([{ taskId, until: { outputMatches: '^ready' } }]);

    const met: TaskConditionMet = {
      type: 'task.condition_met',
      data: { conditionId: 'cond-tilde', taskId, commandId: 'c-y', attempt: 1, userId: 'alice', runId, until: { outputMatches: '^ready' }, outcome: 'matched', line: 'ready', offset: 0, detail: 'output matched at offset 0' },
      metadata: { at: new Date().toISOString(), actor: 'alice' },
    };
    await h.append(conv, met, 'condition:cond-tilde');
    // The next command runs while the first still runs, and the run waits again, now on its exit.
    const second = await h.waitForEvents(conv, (es) => ofType(es, 'run.finished').filter((e) => e.data.outcome === 'waiting').length >= 2, 'the woken run to wait on the exit', 30_000);
    const called = ofType(second, 'tool.called').map((e) => (e.data.name === 'exec' ? String((e.data.args as { command: string }).command) : e.data.name));
    expect(called).toContain('echo after');
    expect(ofType(second, 'wait.declared').at(-1)!.data.taskIds).toEqual([taskId]);
    const todos = ofType(second, 'todos.updated').at(-1)!.data.todos.map((t) => t.status);
    expect(todos).toEqual(['in_progress', 'completed']);

    await h.fake.finish(taskId, 0, 'ready\nbye\n');
    const done = await h.waitForEvents(conv, (es) => ofType(es, 'assistant.message').some((e) => e.data.text.includes('`npm run serve` →')), 'the summary', 30_000);
    const summary = ofType(done, 'assistant.message').map((e) => e.data.text).find((t) => t.includes('`npm run serve` →'))!;
    expect(summary).toContain('`npm run serve` → ready (output matched at offset 0), then exit 0');
    expect(summary).toContain('`echo after` → exit 0');
    await h.settled();
    const wakes = ofType(await h.events(conv), 'run.started').filter((e) => e.data.trigger === 'task_event');
    expect(wakes.map((e) => e.data.taskId)).toEqual([taskId, taskId]);
  });
});
