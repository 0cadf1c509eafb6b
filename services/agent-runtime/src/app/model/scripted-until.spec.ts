import { parseScript, parseUntil } from './scripted-plan';
import { scriptedModel } from './scripted-model';
import type { ToolCall, TranscriptEntry } from './transcript';

/** The scripted model's `~ <condition>` lines: condition waits (issue 10.1) through the built-in model. */
describe('scripted model: condition waits', () => {
  it('parses `~ output|port|file` after a command, and keeps what it cannot read', () => {
    expect(parseUntil('output ^ready on \\d+$')).toEqual({ outputMatches: '^ready on \\d+$' });
    expect(parseUntil('port 8080')).toEqual({ portOpen: 8080 });
    expect(parseUntil('file build/done')).toEqual({ fileExists: 'build/done' });
    for (const bad of ['port 0', 'port 70000', 'port http', 'sometime', 'output']) expect(parseUntil(bad)).toBeNull();
    const s = parseScript('~ port 1 (no command yet)\n$ ./serve\n~ port 8080\n$ curl -s localhost:8080\n~ whenever');
    expect(s.until).toEqual([{ portOpen: 8080 }]);
    expect(s.badUntil).toEqual(['whenever']);
  });

  it('says which condition it does not know and runs nothing', () => {
    const r = scriptedModel([{ kind: 'user', messageId: 'm1', userId: 'alice', text: '$ ./serve\n~ soon' }]);
    expect(r.toolCalls).toEqual([]);
    expect(r.text).toContain('`~ soon`');
  });

  /** Plays the runtime for one turn: answers each call with `answer`, returns the calls made. */
  function turn(t: TranscriptEntry[], answer: (c: ToolCall) => { ok: boolean; result: unknown }): ToolCall[] {
    const calls: ToolCall[] = [];
    for (let i = 0; i < 20; i++) {
      const r = scriptedModel(t);
      t.push({ kind: 'assistant', runId: 'r', toolCalls: r.toolCalls, ...(r.text ? { text: r.text } : {}) });
      if (r.toolCalls.length === 0) return calls;
      for (const c of r.toolCalls) {
        calls.push(c);
        t.push({ kind: 'tool_result', callId: c.callId, name: c.name, ...answer(c) });
      }
    }
    throw new Error('the turn did not end');
  }
  const accept = (c: ToolCall) => ({ ok: true, result: c.name === 'write_todos' ? { todos: c.args.todos, waitForTasks: c.args.wait_for_tasks } : {} });
  const statuses = (c: ToolCall | undefined) => (c?.args.todos as { status: string }[]).map((x) => x.status);
  const lastTodos = (calls: ToolCall[]) => calls.filter((c) => c.name === 'write_todos').at(-1);

  it('waits until the condition holds, goes on while the command runs, waits for its exit at the end, then sums up', () => {
    const t: TranscriptEntry[] = [{ kind: 'user', messageId: 'm1', userId: 'alice', text: '$ ./serve\n~ output ^listening\n$ curl -s localhost:8080' }];
    // Turn 1: the server goes to the background; the wait is on the condition, not the exit.
    const first = turn(t, (c) => (c.name === 'exec' ? { ok: true, result: { taskId: 't1', commandId: 'c1', status: 'running_in_background', attempt: 1 } } : accept(c)));
    expect(first.map((c) => c.name)).toEqual(['write_todos', 'exec', 'write_todos']);
    expect(first[2]!.args.wait_for_tasks).toEqual([{ taskId: 't1', until: { outputMatches: '^listening' } }]);
    expect(String((t.at(-1) as { text?: string }).text)).toContain('when its output matches /^listening/');

    // The condition holds: the next command runs while the server keeps running, and its todo stays open.
    t.push({ kind: 'task_condition', conditionId: 'k1', taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', runId: 'r', until: { outputMatches: '^listening' }, outcome: 'matched', line: 'listening on 8080', offset: 0, detail: 'output matched at offset 0' });
    const second = turn(t, (c) => (c.name === 'exec' ? { ok: true, result: { taskId: 't2', commandId: 'c2', status: 'succeeded', exitCode: 0, signal: null, output: 'ok', outputBytes: 2, truncated: false } } : accept(c)));
    expect(second.map((c) => c.name)).toEqual(['write_todos', 'exec', 'write_todos']);
    // One todo in progress at a time: the server's waits as "ready, still running" while curl runs.
    expect(statuses(second[0])).toEqual(['pending', 'in_progress']);
    expect((second[0]!.args.todos as { content: string }[])[0]!.content).toBe('Run `./serve` (ready, still running)');
    expect(second[1]!.args).toEqual({ command: 'curl -s localhost:8080' });
    // Now only the server is left: a plain wait on its exit, its todo in progress, curl's done.
    expect(second[2]!.args.wait_for_tasks).toEqual(['t1']);
    expect(statuses(second[2])).toEqual(['in_progress', 'completed']);

    // The server exits: read, complete, sum up.
    t.push({ kind: 'task_event', taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', origin: 'agent', status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 20 });
    const third = turn(t, (c) => (c.name === 'read_output' ? { ok: true, result: { taskId: 't1', status: 'succeeded', exitCode: 0, signal: null, output: 'listening on 8080\n', nextOffset: 18, complete: true } } : accept(c)));
    expect(third.map((c) => c.name)).toEqual(['read_output', 'write_todos']);
    expect(statuses(lastTodos(third))).toEqual(['completed', 'completed']);
    const summary = String((t.at(-1) as { text?: string }).text);
    expect(summary).toContain('`./serve` → ready (output matched at offset 0), then exit 0');
    expect(summary).toContain('`curl -s localhost:8080` → exit 0');
  });

  it('keeps waiting on the exit of a command whose condition holds while a later command runs in the background', () => {
    const t: TranscriptEntry[] = [{ kind: 'user', messageId: 'm1', userId: 'alice', text: '$ ./serve\n~ port 8080\n$ ./load-test' }];
    let n = 0;
    const bg = (c: ToolCall) => (c.name === 'exec' ? { ok: true, result: { taskId: `t${++n}`, commandId: `c${n}`, status: 'running_in_background', attempt: 1 } } : accept(c));
    turn(t, bg);
    t.push({ kind: 'task_condition', conditionId: 'k1', taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', runId: 'r', until: { portOpen: 8080 }, outcome: 'matched', detail: 'port 8080 open' });
    const calls = turn(t, bg);
    // The load test's wait names the server too: a turn never ends with a running task's todo unwaited.
    expect(lastTodos(calls)!.args.wait_for_tasks).toEqual(['t2', 't1']);
    // The server finishes first: it is read at once; the load test is still waited for.
    t.push({ kind: 'task_event', taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', origin: 'agent', status: 'failed', exitCode: 2, signal: null, resultState: 'readable', outputBytes: 5 });
    const after = turn(t, (c) => (c.name === 'read_output' ? { ok: true, result: { taskId: 't1', status: 'failed', exitCode: 2, signal: null, output: 'boom\n', nextOffset: 5, complete: true } } : accept(c)));
    expect(after[0]).toMatchObject({ name: 'read_output', args: { taskId: 't1' } });
    expect(statuses(lastTodos(after))).toEqual(['completed', 'in_progress']);
    expect(lastTodos(after)!.args.wait_for_tasks).toEqual(['t2']);
  });

  it('a condition that timed out falls back to waiting for the exit before the next command', () => {
    const t: TranscriptEntry[] = [{ kind: 'user', messageId: 'm1', userId: 'alice', text: '$ ./build\n~ file out/ready\n$ ./deploy' }];
    turn(t, (c) => (c.name === 'exec' ? { ok: true, result: { taskId: 't1', commandId: 'c1', status: 'running_in_background', attempt: 1 } } : accept(c)));
    t.push({ kind: 'task_condition', conditionId: 'k1', taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', runId: 'r', until: { fileExists: 'out/ready' }, outcome: 'timed_out', detail: 'not met within 60000 ms' });
    const calls = turn(t, accept);
    expect(calls.map((c) => c.name)).toEqual(['write_todos']);
    expect(calls[0]!.args.wait_for_tasks).toEqual(['t1']);
    expect(calls.some((c) => c.name === 'exec')).toBe(false);
  });
});
