import type { Todo } from '@handplane/domain';
import { parseCommands, scriptedModel } from './scripted-model';
import type { ModelResponse, ToolCall, TranscriptEntry } from './transcript';

type Answer = { ok: boolean; result: unknown };
type Handlers = Partial<Record<'exec' | 'write_todos' | 'read_output', (call: ToolCall) => Answer>>;

const ok = (result: unknown): Answer => ({ ok: true, result });
const err = (message: string, code = 'validation'): Answer => ({ ok: false, result: { error: { code, message } } });
const finished = (taskId: string, exitCode: number | null, extra: Record<string, unknown> = {}) => ({
  taskId,
  commandId: `c-${taskId}`,
  status: exitCode === 0 ? 'succeeded' : 'failed',
  exitCode,
  signal: null,
  output: '',
  outputBytes: 0,
  truncated: false,
  ...extra,
});
const background = (taskId: string) => ({ taskId, commandId: `c-${taskId}`, status: 'running_in_background' });
const readResult = (taskId: string, status = 'succeeded', exitCode: number | null = 0) => ({
  taskId,
  commandId: `c-${taskId}`,
  offset: 0,
  nextOffset: 3,
  bytes: 3,
  text: 'ok\n',
  status,
  exitCode,
  signal: null,
  resultState: status === 'running' ? 'result_pending' : 'readable',
  eof: status !== 'running',
});
const taskEvent = (taskId: string, exitCode: number | null, status = exitCode === 0 ? 'succeeded' : 'failed', signal: string | null = null): TranscriptEntry => ({
  kind: 'task_event',
  taskId,
  commandId: `c-${taskId}`,
  attempt: 1,
  userId: 'alice',
  origin: 'agent',
  status,
  exitCode,
  signal,
  resultState: 'readable',
  outputBytes: 3,
});

/** Plays the runtime: asks the model, answers its tool calls, until it ends the turn. */
function turn(t: TranscriptEntry[], handlers: Handlers, runId = 'r1'): ModelResponse[] {
  const responses: ModelResponse[] = [];
  for (let guard = 0; guard < 50; guard++) {
    const r = scriptedModel(t);
    responses.push(r);
    t.push({ kind: 'assistant', runId, toolCalls: r.toolCalls, ...(r.text ? { text: r.text } : {}) });
    if (r.toolCalls.length === 0) return responses;
    for (const c of r.toolCalls) {
      const h = handlers[c.name as keyof Handlers];
      const a = h ? h(c) : ok({ todos: c.args.todos, waitForTasks: c.args.wait_for_tasks });
      t.push({ kind: 'tool_result', callId: c.callId, name: c.name, ok: a.ok, result: a.result });
    }
  }
  throw new Error('the model never ended its turn');
}

const user = (text: string, messageId = 'm1'): TranscriptEntry => ({ kind: 'user', messageId, userId: 'alice', text });
const calls = (rs: ModelResponse[]) => rs.flatMap((r) => r.toolCalls.map((c) => c.name));
const statuses = (c: ToolCall) => (c.args.todos as Todo[]).map((t) => t.status);
const lastText = (rs: ModelResponse[]) => rs[rs.length - 1]!.text;

describe('scripted model', () => {
  it('parses `$ <command>` lines and ignores everything else for now', () => {
    expect(parseCommands('hello\n$ echo one\r\n  $   ls -la  \n#fake-complete\n? why\n$\n$x\n$ sleep 1; echo done')).toEqual(['echo one', 'ls -la', 'sleep 1; echo done']);
  });

  it('answers a message with nothing to run, once', () => {
    const t = [user('just chatting')];
    const rs = turn(t, {});
    expect(rs).toEqual([{ toolCalls: [], text: expect.stringContaining('`$ <command>`') }]);
    expect(scriptedModel(t)).toEqual({ toolCalls: [] });
  });

  it('writes one todo per command first, the first in progress', () => {
    const r = scriptedModel([user('$ echo one\n$ echo two', 'msg7')]);
    expect(r).toEqual({
      toolCalls: [
        {
          callId: 'call-1',
          name: 'write_todos',
          args: {
            todos: [
              { id: 'msg7-1', content: 'Run `echo one`', status: 'in_progress', taskIds: [] },
              { id: 'msg7-2', content: 'Run `echo two`', status: 'pending', taskIds: [] },
            ],
            wait_for_tasks: [],
          },
        },
      ],
    });
  });

  it('runs foreground commands in order, marking todos, and summarises the exit codes', () => {
    const t = [user('$ echo one\n$ false')];
    const exits: Record<string, Answer> = { 'echo one': ok(finished('t1', 0)), false: ok(finished('t2', 1)) };
    const rs = turn(t, { exec: (c) => exits[String(c.args.command)]! });
    expect(calls(rs)).toEqual(['write_todos', 'exec', 'write_todos', 'exec', 'write_todos']);
    const todoCalls = rs.flatMap((r) => r.toolCalls).filter((c) => c.name === 'write_todos');
    expect(todoCalls.map(statuses)).toEqual([
      ['in_progress', 'pending'],
      ['completed', 'in_progress'],
      ['completed', 'completed'],
    ]);
    expect(rs.flatMap((r) => r.toolCalls).map((c) => c.callId)).toEqual(['call-1', 'call-2', 'call-3', 'call-4', 'call-5']);
    expect(lastText(rs)).toBe('`echo one` → exit 0\n`false` → exit 1');
    expect(scriptedModel(t)).toEqual({ toolCalls: [] });
  });

  it('declares a wait for a background command, ends the turn, and continues when woken', () => {
    const t = [user('$ echo one\n$ sleep 100')];
    const first = turn(t, { exec: (c) => (c.args.command === 'echo one' ? ok(finished('t1', 0)) : ok(background('t2'))) });
    expect(calls(first)).toEqual(['write_todos', 'exec', 'write_todos', 'exec', 'write_todos']);
    const wait = first[4]!.toolCalls[0]!;
    expect(wait.args.wait_for_tasks).toEqual(['t2']);
    expect(statuses(wait)).toEqual(['completed', 'in_progress']);
    expect((wait.args.todos as Todo[])[1]!.taskIds).toEqual(['t2']);
    expect(lastText(first)).toMatch(/`sleep 100` is running in the background \(task t2\)/);

    t.push(taskEvent('t2', 3));
    const woken = turn(t, { read_output: (c) => ok(readResult(String(c.args.taskId), 'failed', 3)) }, 'r2');
    expect(calls(woken)).toEqual(['read_output', 'write_todos']);
    expect(woken[0]!.toolCalls[0]!.args).toEqual({ taskId: 't2' });
    expect(statuses(woken[1]!.toolCalls[0]!)).toEqual(['completed', 'completed']);
    expect(lastText(woken)).toBe('`echo one` → exit 0\n`sleep 100` → exit 3');
  });

  it('is resumable: every prefix of a transcript yields the response that followed it', () => {
    const t = [user('$ a\n$ b\n$ c')];
    const exec = (c: ToolCall) => (c.args.command === 'b' ? ok(background('tb')) : ok(finished(`t${String(c.args.command)}`, 0)));
    turn(t, { exec });
    t.push(taskEvent('tb', 0));
    turn(t, { exec, read_output: () => ok(readResult('tb')) }, 'r2');
    t.forEach((e, k) => {
      if (e.kind !== 'assistant') return;
      const fresh = scriptedModel(structuredClone(t.slice(0, k)));
      expect({ toolCalls: fresh.toolCalls, text: fresh.text }).toEqual({ toolCalls: e.toolCalls, text: e.text });
    });
    expect((t[t.length - 1] as { text?: string }).text).toBe('`a` → exit 0\n`b` → exit 0\n`c` → exit 0');
  });

  it('stays quiet when woken by another task while its own is still running', () => {
    const t = [user('$ sleep 100')];
    turn(t, { exec: () => ok(background('t1')) });
    t.push(taskEvent('other', 0));
    expect(turn(t, {}, 'r2')).toEqual([{ toolCalls: [] }]);
  });

  it('reads the task when the host refuses the wait because it already finished, then goes on', () => {
    const t = [user('$ sleep 1\n$ echo two')];
    const rs = turn(t, {
      exec: (c) => (c.args.command === 'sleep 1' ? ok(background('t1')) : ok(finished('t2', 0))),
      write_todos: (c) => ((c.args.wait_for_tasks as string[]).length ? err('wait_for_tasks rejected: task t1: already finished') : ok({})),
      read_output: () => ok(readResult('t1', 'succeeded', 0)),
    });
    expect(calls(rs)).toEqual(['write_todos', 'exec', 'write_todos', 'read_output', 'write_todos', 'exec', 'write_todos']);
    expect(lastText(rs)).toBe('`sleep 1` → exit 0\n`echo two` → exit 0');
  });

  it('explains a refused wait on a task that is still running, without looping', () => {
    const t = [user('$ sleep 100')];
    const rs = turn(t, {
      exec: () => ok(background('t1')),
      write_todos: (c) => ((c.args.wait_for_tasks as string[]).length ? err('wait_for_tasks rejected: task t1: host unavailable') : ok({})),
      read_output: () => ok(readResult('t1', 'running', null)),
    });
    expect(calls(rs)).toEqual(['write_todos', 'exec', 'write_todos', 'read_output']);
    expect(lastText(rs)).toMatch(/could not wait for task t1.*host unavailable/);
    // When the task later wakes the conversation, the plan completes.
    t.push(taskEvent('t1', 0));
    const woken = turn(t, { read_output: () => ok(readResult('t1')) }, 'r2');
    expect(calls(woken)).toEqual(['read_output', 'write_todos']);
    expect(lastText(woken)).toBe('`sleep 100` → exit 0');
  });

  it('reports a command that could not start and goes on with the next', () => {
    const t = [user('$ bad\n$ echo ok')];
    const rs = turn(t, { exec: (c) => (c.args.command === 'bad' ? err('no runner is available', 'unavailable') : ok(finished('t2', 0))) });
    expect(lastText(rs)).toBe('`bad` → not run: no runner is available\n`echo ok` → exit 0');
  });

  it('waits for a task whose exec gave up before the host’s verdict', () => {
    const t = [user('$ slow')];
    const rs = turn(t, { exec: () => ({ ok: false, result: { taskId: 't1', error: { code: 'unavailable', message: 'no verdict in time' } } }) });
    expect(calls(rs)).toEqual(['write_todos', 'exec', 'write_todos']);
    expect(rs[2]!.toolCalls[0]!.args.wait_for_tasks).toEqual(['t1']);
  });

  it('describes signals and statuses other than succeeded/failed', () => {
    const t = [user('$ a\n$ b')];
    const rs = turn(t, {
      exec: (c) => (c.args.command === 'a' ? ok(finished('ta', null, { status: 'cancelled', signal: 'SIGTERM' })) : ok(finished('tb', 124, { status: 'timed_out' }))),
    });
    expect(lastText(rs)).toBe('`a` → signal SIGTERM (cancelled)\n`b` → exit 124 (timed_out)');
  });

  it('tells a task that did not simply exit as its receipt says (issue 10.4)', () => {
    const t = [user('$ a\n$ b')];
    const killed = { outcome: 'killed', summary: 'killed by SIGTERM at the request of user bob' };
    const exited = { outcome: 'exited', summary: 'exited with code 0' };
    const rs = turn(t, {
      exec: (c) =>
        c.args.command === 'a'
          ? ok(finished('ta', null, { status: 'cancelled', signal: 'SIGTERM', receipt: killed }))
          : ok(finished('tb', 0, { receipt: exited })),
    });
    expect(lastText(rs)).toBe('`a` → killed by SIGTERM at the request of user bob (cancelled)\n`b` → exit 0');
  });

  it('stops instead of repeating a refused todo list', () => {
    const t = [user('$ a')];
    const rs = turn(t, { write_todos: () => err('invalid todo list: boom') });
    expect(calls(rs)).toEqual(['write_todos']);
    expect(lastText(rs)).toBe('I could not update the todo list: invalid todo list: boom');
  });

  it('starts a new plan for a new message and ignores the old plan’s task events', () => {
    const t = [user('$ sleep 100', 'm1')];
    turn(t, { exec: () => ok(background('t1')) });
    t.push(user('$ echo two', 'm2'));
    const rs = turn(t, { exec: () => ok(finished('t2', 0)) }, 'r2');
    expect((rs[0]!.toolCalls[0]!.args.todos as Todo[]).map((x) => x.id)).toEqual(['m2-1']);
    expect(lastText(rs)).toBe('`echo two` → exit 0');
    t.push(taskEvent('t1', 0));
    expect(turn(t, {}, 'r3')).toEqual([{ toolCalls: [] }]);
  });

  it('numbers call ids across the whole transcript, so they never repeat', () => {
    const t = [user('$ a', 'm1')];
    turn(t, { exec: () => ok(finished('t1', 0)) });
    t.push(user('$ b', 'm2'));
    const rs = turn(t, { exec: () => ok(finished('t2', 0)) }, 'r2');
    expect(rs.flatMap((r) => r.toolCalls).map((c) => c.callId)).toEqual(['call-4', 'call-5', 'call-6']);
  });
});
