import type { Todo } from '@handplane/domain';
import { parseScript } from './scripted-plan';
import { scriptedModel } from './scripted-model';
import type { ModelResponse, ToolCall, TranscriptEntry } from './transcript';

type Answer = { ok: boolean; result: unknown };
const ok = (result: unknown): Answer => ({ ok: true, result });
const guard = (rule: string): Answer => ({ ok: false, result: { error: { code: 'guard_rejected', rule, message: `refused by ${rule}` } } });
const user = (text: string): TranscriptEntry => ({ kind: 'user', messageId: 'm1', userId: 'alice', text });

/**
 * Plays a runtime that refuses what breaks the rules, as the governance does: it answers each call
 * with `answer`, and forces one more turn (G6) when the model ends its turn with unfinished todos
 * and nothing to wait for.
 */
function turn(t: TranscriptEntry[], answer: (c: ToolCall, state: { todos: Todo[]; waiting: boolean }) => Answer): ModelResponse[] {
  const rs: ModelResponse[] = [];
  const state = { todos: [] as Todo[], waiting: false };
  for (let i = 0; i < 40; i++) {
    const r = scriptedModel(t);
    rs.push(r);
    t.push({ kind: 'assistant', runId: 'r1', toolCalls: r.toolCalls, ...(r.text ? { text: r.text } : {}) });
    if (!r.toolCalls.length) {
      const unfinished = state.todos.some((x) => x.status !== 'completed');
      if (!unfinished || state.waiting || rs.some((x) => x.text?.includes('approval') || x.text?.startsWith('I asked'))) return rs;
      t.push({ kind: 'guard', rule: 'G6', detail: 'unfinished todos and no wait' });
      continue;
    }
    for (const c of r.toolCalls) {
      const a = answer(c, state);
      if (c.name === 'write_todos' && a.ok) {
        state.todos = c.args.todos as Todo[];
        state.waiting = ((c.args.wait_for_tasks as string[]) ?? []).length > 0;
      }
      t.push({ kind: 'tool_result', callId: c.callId, name: c.name, ok: a.ok, result: a.result });
    }
  }
  throw new Error('no end of turn');
}

const names = (rs: ModelResponse[]) => rs.flatMap((r) => r.toolCalls.map((c) => (c.name === 'exec' ? `exec(${String(c.args.command)})` : c.name)));
const background = (taskId: string) => ok({ taskId, commandId: `c-${taskId}`, status: 'running_in_background' });
const finished = (taskId: string) => ok({ taskId, commandId: `c-${taskId}`, status: 'succeeded', exitCode: 0, signal: null, output: '', outputBytes: 0, truncated: false });

describe('scripted model: misbehaviour on purpose, questions and approvals (DESIGN.md §8)', () => {
  it('parses commands, questions and directives in order', () => {
    const s = parseScript('#detach\n$ make\n? which branch?\n$ make test\n#idle\n#unknown');
    expect(s.steps).toEqual([
      { kind: 'command', index: 0 },
      { kind: 'question', index: 0 },
      { kind: 'command', index: 1 },
    ]);
    expect([...s.directives]).toEqual(['detach', 'idle']);
  });

  it('#detach appends & once; after G2 refuses it the command runs in the foreground', () => {
    const t = [user('#detach\n$ make')];
    const rs = turn(t, (c) => (c.name === 'exec' ? (String(c.args.command).endsWith('&') ? guard('G2') : finished('t1')) : ok({})));
    expect(names(rs)).toEqual(['write_todos', 'exec(make &)', 'exec(make)', 'write_todos']);
    expect(rs[rs.length - 1]!.text).toBe('`make` → exit 0');
  });

  it('#poll polls a background task once; after G3 refuses it the model declares the wait', () => {
    const t = [user('#poll\n$ sleep 100')];
    const rs = turn(t, (c) => (c.name !== 'exec' ? ok({}) : c.args.command === 'sleep 100' ? background('t1') : guard('G3')));
    expect(names(rs)).toEqual(['write_todos', 'exec(sleep 100)', 'exec(sleep 5 && ps aux)', 'write_todos']);
    expect(rs[3]!.toolCalls[0]!.args.wait_for_tasks).toEqual(['t1']);
  });

  it('#fake-complete marks the running task’s todo completed once; after G4 refuses it the model waits', () => {
    const t = [user('#fake-complete\n$ sleep 100')];
    const rs = turn(t, (c, s) => {
      if (c.name === 'exec') return background('t1');
      const todos = c.args.todos as Todo[];
      return todos.some((x) => x.status === 'completed' && x.taskIds.includes('t1')) && !s.waiting ? guard('G4') : ok({});
    });
    const writes = rs.flatMap((r) => r.toolCalls).filter((c) => c.name === 'write_todos');
    expect(writes.map((c) => [(c.args.todos as Todo[])[0]!.status, c.args.wait_for_tasks])).toEqual([
      ['in_progress', []],
      ['completed', []],
      ['in_progress', ['t1']],
    ]);
  });

  it('#idle ends the turn with unfinished todos once; the forced turn (G6) goes on with the plan', () => {
    const t = [user('#idle\n$ make')];
    const rs = turn(t, (c) => (c.name === 'exec' ? finished('t1') : ok({})));
    expect(rs[1]).toEqual({ toolCalls: [], text: '(#idle) Stopping here for now.' });
    expect(t.filter((e) => e.kind === 'guard')).toHaveLength(1);
    expect(names(rs)).toEqual(['write_todos', 'exec(make)', 'write_todos']);
  });

  it('? asks the user, ends the turn, and goes on with the answer', () => {
    const t = [user('? which branch?\n$ git checkout main')];
    const first = turn(t, (c) => (c.name === 'ask_user' ? ok({ questionId: 'q1', status: 'asked', message: '' }) : ok({})));
    expect(names(first)).toEqual(['write_todos', 'ask_user']);
    expect(first[first.length - 1]!.text).toBe('I asked: which branch? I will continue when you answer.');
    t.push({ kind: 'answer', questionId: 'q1', text: 'main', by: 'bob' });
    const second = turn(t, (c) => (c.name === 'exec' ? finished('t1') : ok({})));
    expect(names(second)).toEqual(['exec(git checkout main)', 'write_todos']);
    expect(second[second.length - 1]!.text).toBe('? which branch? → main\n`git checkout main` → exit 0');
  });

  it('waits for a person’s approval, then reads the result of the approved run', () => {
    const t = [user('$ rm -rf build')];
    const first = turn(t, (c) => (c.name === 'exec' ? ok({ status: 'approval_pending', approvalId: 'apr-1', command: 'rm -rf build', message: '' }) : ok({})));
    expect(first[first.length - 1]!.text).toMatch(/needs a person's approval \(apr-1\)/);
    t.push({ kind: 'approval', approvalId: 'apr-1', decision: 'approve', by: 'bob', command: 'rm -rf build', callId: 'approved-apr-1' });
    t.push({ kind: 'tool_result', callId: 'approved-apr-1', name: 'exec', ok: true, result: finished('t9').result });
    const second = turn(t, () => ok({}));
    expect(names(second)).toEqual(['write_todos']);
    expect(second[second.length - 1]!.text).toBe('`rm -rf build` → exit 0');
  });

  it('reports a rejected approval and goes on', () => {
    const t = [user('$ rm -rf build\n$ echo next')];
    turn(t, (c) => (c.name === 'exec' ? ok({ status: 'approval_pending', approvalId: 'apr-1', command: 'rm -rf build', message: '' }) : ok({})));
    t.push({ kind: 'approval', approvalId: 'apr-1', decision: 'reject', by: 'bob', command: 'rm -rf build' });
    const rs = turn(t, (c) => (c.name === 'exec' ? finished('t2') : ok({})));
    expect(rs[rs.length - 1]!.text).toBe('`rm -rf build` → not run: rejected by bob\n`echo next` → exit 0');
  });

  describe('todos of an earlier message (team conversations)', () => {
    function waitingOn(t: TranscriptEntry[]): void {
      turn(t, (c) => (c.name === 'exec' ? background('t1') : ok({})));
    }

    it('declares the wait again after a person’s message ended it (G7), with its reply in the same response', () => {
      const t = [user('$ sleep 100')];
      waitingOn(t);
      t.push({ kind: 'user', messageId: 'm2', userId: 'bob', text: 'how is it going?' });
      const r = scriptedModel(t);
      expect(r.text).toMatch(/nothing for me to run/);
      expect(r.toolCalls).toEqual([{ callId: 'call-4', name: 'write_todos', args: { todos: [expect.objectContaining({ id: 'm1-1', status: 'in_progress', taskIds: ['t1'] })], wait_for_tasks: ['t1'] } }]);
      t.push({ kind: 'assistant', runId: 'r2', toolCalls: r.toolCalls, text: r.text! }, { kind: 'tool_result', callId: 'call-4', name: 'write_todos', ok: true, result: {} });
      expect(scriptedModel(t)).toEqual({ toolCalls: [] });
    });

    it('reads and completes an earlier todo whose task finished while a question was open', () => {
      const t = [user('$ sleep 100')];
      waitingOn(t);
      t.push({ kind: 'user', messageId: 'm2', userId: 'bob', text: '? proceed?' });
      turn(t, (c) => (c.name === 'ask_user' ? ok({ questionId: 'q1', status: 'asked', message: '' }) : ok({})));
      t.push({ kind: 'answer', questionId: 'q1', text: 'yes', by: 'bob' });
      // The wait is refused: the task finished meanwhile (its completion is still queued behind the question).
      const rs = turn(t, (c) => {
        if (c.name === 'write_todos' && (c.args.wait_for_tasks as string[]).length) return { ok: false, result: { error: { code: 'guard_rejected', message: 'task t1: already finished' } } };
        if (c.name === 'read_output') return ok({ taskId: 't1', commandId: 'c-t1', offset: 0, nextOffset: 3, bytes: 3, text: 'ok\n', status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', eof: true });
        return ok({});
      });
      expect(names(rs)).toEqual(['write_todos', 'read_output', 'write_todos']);
      const last = rs.flatMap((r) => r.toolCalls).pop()!;
      expect(last.args).toEqual({ todos: [expect.objectContaining({ id: 'm1-1', status: 'completed' })], wait_for_tasks: [] });
    });
  });
});
