import type { ConversationRunEvent } from '@handplane/domain';
import { emptyCheckpoint, type Checkpoint } from './checkpoint';
import { afterModel, afterToolCall, finishRun, publicArgs, startRun } from './run-steps';

const at = '2026-01-01T00:00:00.000Z';
const message = { kind: 'message' as const, seq: 7, userId: 'bob', message: { messageId: 'm1', userId: 'bob', text: '$ ls' } };

function started(): Checkpoint {
  return startRun(emptyCheckpoint(), message, 'r1', at);
}

describe('run steps', () => {
  it('starts a run for a message: run.started, the message in the transcript, the sender as the run user', () => {
    const cp = started();
    expect(cp.outbox).toEqual([{ msgId: 'run:r1:started', event: { type: 'run.started', data: { runId: 'r1', userId: 'bob', trigger: 'message', messageId: 'm1' }, metadata: { at, actor: 'bob' } } }]);
    expect(cp.transcript).toEqual([{ kind: 'user', messageId: 'm1', userId: 'bob', text: '$ ls' }]);
    expect(cp.conv).toMatchObject({ status: 'running', runId: 'r1', userId: 'bob' });
  });

  it('starts a woken run as the task’s originating user, with the completion in the transcript', () => {
    const event = { taskId: 't1', commandId: 'c1', attempt: 1, userId: 'alice', origin: 'agent' as const, status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 2 };
    const cp = startRun(emptyCheckpoint(), { kind: 'wakeup', taskId: 't1', attempt: 1, userId: 'alice', event }, 'r2', at);
    expect(cp.active).toMatchObject({ runId: 'r2', userId: 'alice', trigger: 'task_event', taskId: 't1' });
    expect(cp.transcript).toEqual([{ kind: 'task_event', ...event }]);
  });

  it('announces tool calls with ids derived from the run and step, and keeps the snapshot for all of them (G8)', () => {
    const cp = afterModel(started(), { toolCalls: [{ callId: 'call-1', name: 'exec', args: { command: 'ls' } }, { callId: 'call-2', name: 'read_output', args: { taskId: 't' } }], text: 'working' }, at);
    expect(cp.outbox.map((o) => [o.msgId, o.event.type])).toEqual([
      ['run:r1:0:text', 'assistant.message'],
      ['run:r1:0:called:call-1', 'tool.called'],
      ['run:r1:0:called:call-2', 'tool.called'],
    ]);
    expect(cp.active?.pending).toEqual({ calls: expect.any(Array), done: 0, snapshot: started().conv });
  });

  it('records each result with the events it decided, and moves to the next step after the last call', () => {
    let cp = afterModel(started(), { toolCalls: [{ callId: 'call-1', name: 'write_todos', args: {} }, { callId: 'call-2', name: 'exec', args: {} }] }, at);
    const todos: ConversationRunEvent = { type: 'todos.updated', data: { runId: 'r1', todos: [{ id: 'a', content: 'x', status: 'in_progress', taskIds: [] }], waitForTasks: [] }, metadata: { at } };
    cp = afterToolCall(cp, cp.active!.pending!.calls[0]!, { ok: true, result: { fine: 1 }, events: [] }, [todos], at);
    expect(cp.outbox.map((o) => o.msgId)).toEqual(['run:r1:0:call-1:0', 'run:r1:0:call-1:result']);
    expect(cp.conv.todos).toHaveLength(1);
    expect(cp.active).toMatchObject({ step: 0, pending: { done: 1 } });
    // The second call still reads the snapshot from before the first one.
    expect(cp.active!.pending!.snapshot.todos).toEqual([]);
    cp = afterToolCall(cp, cp.active!.pending!.calls[1]!, { ok: false, result: { error: { code: 'x', message: 'y' } }, events: [] }, [], at);
    expect(cp.active).toMatchObject({ step: 1, pending: null });
    expect(cp.transcript.slice(-2).map((e) => e.kind)).toEqual(['tool_result', 'tool_result']);
  });

  it('ends the run when the model answers without tool calls: completed, or waiting with a validated wait', () => {
    const done = afterModel(started(), { toolCalls: [], text: 'bye' }, at);
    expect(done.active).toBeNull();
    expect(done.outbox.map((o) => [o.msgId, o.event.type])).toEqual([
      ['run:r1:0:text', 'assistant.message'],
      ['run:r1:finished', 'run.finished'],
    ]);
    expect(done.outbox[1]!.event.data).toEqual({ runId: 'r1', outcome: 'completed' });

    const s = started();
    const waiting: Checkpoint = { ...s, conv: { ...s.conv, waitForTasks: ['t1'] } as Checkpoint['conv'] };
    const w = finishRun(waiting, at);
    expect(w.outbox[0]!.event.data).toEqual({ runId: 'r1', outcome: 'waiting' });
    expect(w.conv).toEqual({ status: 'waiting', taskIds: ['t1'], todos: [] });
  });

  it('never shows command environment values in tool.called', () => {
    const call = { callId: 'call-1', name: 'exec', args: { command: 'deploy', env: { TOKEN: 's3cret', MODE: 'x' } } };
    expect(publicArgs(call)).toEqual({ command: 'deploy', env: { TOKEN: '[redacted]', MODE: '[redacted]' } });
    const cp = afterModel(started(), { toolCalls: [call] }, at);
    expect(JSON.stringify(cp.outbox)).not.toContain('s3cret');
    expect(cp.active!.pending!.calls[0]!.args).toEqual(call.args);
  });
});
