import { parseScript } from './scripted-plan';
import { scriptedModel } from './scripted-model';
import type { ToolCall, TranscriptEntry } from './transcript';

/** The scripted model's `< input` lines: the answer to a prompt, written with `write_stdin`. */
describe('scripted model: input for a command', () => {
  it('parses `< text` lines as the input of the command before them (an empty `<` is an empty line)', () => {
    const s = parseScript('< ignored, no command yet\n$ ./install\n< y\n<\n$ echo done\n? sure\n< also for echo');
    expect(s.commands).toEqual(['./install', 'echo done']);
    expect(s.stdin).toEqual([['y', ''], ['also for echo']]);
    expect(s.steps).toEqual([
      { kind: 'command', index: 0 },
      { kind: 'command', index: 1 },
      { kind: 'question', index: 0 },
    ]);
  });

  it('writes the input once the command runs in the background (with its attempt), then waits for it, then reads it', () => {
    const t: TranscriptEntry[] = [{ kind: 'user', messageId: 'm1', userId: 'alice', text: '$ ./install\n< y' }];
    const step = (answer: (c: ToolCall) => { ok: boolean; result: unknown }): ToolCall => {
      const r = scriptedModel(t);
      expect(r.toolCalls).toHaveLength(1);
      const c = r.toolCalls[0]!;
      t.push({ kind: 'assistant', runId: 'r1', toolCalls: r.toolCalls });
      t.push({ kind: 'tool_result', callId: c.callId, name: c.name, ...answer(c) });
      return c;
    };
    const todos = (c: ToolCall) => ({ ok: true, result: { todos: c.args.todos, waitForTasks: c.args.wait_for_tasks } });
    expect(step(todos).name).toBe('write_todos');
    const exec = step(() => ({ ok: true, result: { taskId: 't1', commandId: 'c1', status: 'running_in_background', attempt: 2 } }));
    expect(exec).toMatchObject({ name: 'exec', args: { command: './install' } });
    const write = step(() => ({ ok: true, result: { taskId: 't1', attempt: 2, bytes: 2, closed: false, totalBytes: 2 } }));
    expect(write).toMatchObject({ name: 'write_stdin', args: { taskId: 't1', attempt: 2, data: 'y\n' } });
    const wait = step(todos);
    expect(wait).toMatchObject({ name: 'write_todos', args: { wait_for_tasks: ['t1'] } });
    // No second write: the turn ends with the wait.
    expect(scriptedModel(t).toolCalls).toEqual([]);
    t.push({ kind: 'task_event', taskId: 't1', commandId: 'c1', attempt: 2, userId: 'alice', origin: 'agent', status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 20 });
    expect(scriptedModel(t).toolCalls[0]).toMatchObject({ name: 'read_output', args: { taskId: 't1' } });
  });

  it('a command that finished in the foreground gets no input', () => {
    const t: TranscriptEntry[] = [{ kind: 'user', messageId: 'm1', userId: 'alice', text: '$ echo hi\n< y' }];
    const names: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = scriptedModel(t);
      t.push({ kind: 'assistant', runId: 'r1', toolCalls: r.toolCalls, ...(r.text ? { text: r.text } : {}) });
      if (r.toolCalls.length === 0) break;
      for (const c of r.toolCalls) {
        names.push(c.name);
        const result = c.name === 'exec' ? { taskId: 't1', commandId: 'c1', status: 'succeeded', exitCode: 0, signal: null, output: 'hi\n', outputBytes: 3, truncated: false } : { todos: c.args.todos, waitForTasks: [] };
        t.push({ kind: 'tool_result', callId: c.callId, name: c.name, ok: true, result });
      }
    }
    expect(names).not.toContain('write_stdin');
    expect(names).toContain('exec');
  });
});
