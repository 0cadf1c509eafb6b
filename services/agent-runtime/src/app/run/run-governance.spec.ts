import type { ConversationRunEvent, Todo } from '@handplane/domain';
import { emptyCheckpoint, type Checkpoint } from './checkpoint';
import type { WorkItem } from './queue';
import { afterModel, afterToolCall, isStale, MAX_FORCED_TURNS, startRun, steer } from './run-steps';

const at = '2026-01-01T00:00:00.000Z';
const message = (seq: number, userId = 'alice', text = '$ make'): Extract<WorkItem, { kind: 'message' }> => ({ kind: 'message', seq, userId, message: { messageId: `m${seq}`, userId, text } });
const todos = (runId: string, list: Todo[], waitForTasks: string[] = []): ConversationRunEvent => ({ type: 'todos.updated', data: { runId, todos: list, waitForTasks }, metadata: { at } });
const waitDeclared = (runId: string, taskIds: string[]): ConversationRunEvent => ({ type: 'wait.declared', data: { runId, taskIds }, metadata: { at } });
const types = (cp: Checkpoint) => cp.outbox.map((o) => o.event.type);

/** A run with one tool call answered by `events` (what write_todos would have decided). */
function withDecided(cp: Checkpoint, events: ConversationRunEvent[]): Checkpoint {
  const c = afterModel(cp, { toolCalls: [{ callId: `c${cp.transcript.length}`, name: 'write_todos', args: {} }] }, at);
  return afterToolCall(c, c.active!.pending!.calls[0]!, { ok: true, result: {}, events: [] }, events, at);
}

const unfinished = (runId: string) => withDecided(startRun(emptyCheckpoint(), message(1), runId, at), [todos(runId, [{ id: 'a', content: 'build', status: 'in_progress', taskIds: ['t1'] }])]);

describe('run steps: governance', () => {
  describe('G6, the suspension guard', () => {
    it('forces another turn when the model stops with unfinished todos and no wait, telling it why', () => {
      const cp = afterModel(unfinished('r1'), { toolCalls: [], text: 'done!' }, at);
      expect(cp.active).toMatchObject({ runId: 'r1', forced: 1, pending: null });
      expect(types(cp)).toEqual(['assistant.message', 'guard.rejected']);
      expect(cp.outbox[1]!.event.data).toMatchObject({ rule: 'G6', detail: expect.stringContaining('"build" (in_progress, tasks t1)') });
      expect(cp.transcript[cp.transcript.length - 1]).toEqual({ kind: 'guard', rule: 'G6', detail: expect.stringContaining('wait_for_tasks') });
    });

    it(`asks the user after ${MAX_FORCED_TURNS} forced turns and suspends on the question`, () => {
      let cp = unfinished('r1');
      for (let i = 0; i < MAX_FORCED_TURNS; i++) cp = afterModel(cp, { toolCalls: [] }, at);
      cp = afterModel(cp, { toolCalls: [] }, at);
      expect(types(cp)).toEqual(['guard.rejected', 'question.asked', 'run.finished']);
      expect(cp.outbox[1]!.event.data).toMatchObject({ questionId: 'g6-r1', text: expect.stringContaining('How should I continue?') });
      expect(cp.outbox[2]!.event.data).toEqual({ runId: 'r1', outcome: 'waiting' });
      expect(cp.active).toBeNull();
      expect(cp.conv.open).toEqual([{ kind: 'question', id: 'g6-r1', runId: 'r1', userId: 'alice' }]);
    });

    it('lets the run suspend when a validated wait backs the unfinished todos', () => {
      const cp = afterModel(withDecided(unfinished('r1'), [waitDeclared('r1', ['t1'])]), { toolCalls: [] }, at);
      expect(types(cp)).toEqual(['run.finished']);
      expect(cp.outbox[0]!.event.data).toEqual({ runId: 'r1', outcome: 'waiting' });
    });
  });

  describe('G7: human input ends the wait', () => {
    const waiting = () => afterModel(withDecided(unfinished('r1'), [waitDeclared('r1', ['t1'])]), { toolCalls: [] }, at);

    it('a new message invalidates the wait before its run starts', () => {
      const cp = startRun(waiting(), message(2, 'bob'), 'r2', at);
      expect(cp.outbox.map((o) => [o.msgId, o.event.type])).toEqual([
        ['run:r2:wait.invalidated', 'wait.invalidated'],
        ['run:r2:started', 'run.started'],
      ]);
      expect(cp.conv).toMatchObject({ status: 'running', waitForTasks: [] });
    });

    it('a message that arrives during the run steers it: into the transcript, and the wait ends', () => {
      const running = withDecided(unfinished('r1'), [waitDeclared('r1', ['t1'])]);
      const cp = steer(running, [message(5, 'bob', 'stop after the build')], at);
      expect(cp.transcript[cp.transcript.length - 1]).toEqual({ kind: 'user', messageId: 'm5', userId: 'bob', text: 'stop after the build' });
      expect(cp.outbox).toEqual([{ msgId: 'run:r1:steer:5', event: { type: 'wait.invalidated', data: { reason: 'message', runId: 'r1', taskIds: ['t1'] }, metadata: { at, actor: 'bob' } } }]);
      expect(cp.active).toMatchObject({ runId: 'r1' });
    });

    it('an answer starts a run as the person who answered, with the answer in the transcript', () => {
      let cp = unfinished('r1');
      for (let i = 0; i <= MAX_FORCED_TURNS; i++) cp = afterModel(cp, { toolCalls: [] }, at);
      const answer: WorkItem = { kind: 'answer', seq: 9, userId: 'bob', answer: { questionId: 'g6-r1', text: 'wait for it', by: 'bob' } };
      expect(isStale(cp, answer)).toBe(false);
      const next = startRun(cp, answer, 'r2', at);
      expect(next.active).toMatchObject({ trigger: 'answer', userId: 'bob', questionId: 'g6-r1' });
      expect(next.conv.open).toBeUndefined();
      expect(next.transcript[next.transcript.length - 1]).toEqual({ kind: 'answer', questionId: 'g6-r1', text: 'wait for it', by: 'bob' });
      expect(isStale(next, answer)).toBe(true);
    });
  });

  describe('approvals', () => {
    function pendingApproval(): Checkpoint {
      let cp = startRun(emptyCheckpoint(), message(1), 'r1', at);
      cp = afterModel(cp, { toolCalls: [{ callId: 'c1', name: 'exec', args: { command: 'rm -rf build', env: { TOKEN: 's3cret' } } }] }, at);
      const requested: ConversationRunEvent = { type: 'approval.requested', data: { approvalId: 'apr-1', runId: 'r1', command: 'rm -rf build', reason: 'policy' }, metadata: { at, actor: 'alice' } };
      cp = afterToolCall(cp, cp.active!.pending!.calls[0]!, { ok: true, result: { status: 'approval_pending', approvalId: 'apr-1', command: 'rm -rf build', message: '' }, events: [] }, [requested], at);
      return afterModel(cp, { toolCalls: [] }, at);
    }

    it('a person’s approval starts a run as the asking user that runs the approved call itself', () => {
      const cp = pendingApproval();
      expect(cp.outbox.map((o) => o.event.data)).toEqual([{ runId: 'r1', outcome: 'waiting' }]);
      const decision: WorkItem = { kind: 'approval', seq: 4, userId: 'bob', decision: { approvalId: 'apr-1', decision: 'approve', by: 'bob', automated: false } };
      const next = startRun(cp, decision, 'r2', at);
      expect(next.active).toMatchObject({ trigger: 'approval', userId: 'alice', approvalId: 'apr-1' });
      expect(next.active!.pending!.calls).toEqual([{ callId: 'approved-apr-1', name: 'exec', args: { command: 'rm -rf build', env: { TOKEN: 's3cret' } }, approvalId: 'apr-1' }]);
      expect(JSON.stringify(next.outbox)).not.toContain('s3cret');
      expect(types(next)).toEqual(['run.started', 'tool.called']);
      expect(next.transcript[next.transcript.length - 1]).toEqual({ kind: 'approval', approvalId: 'apr-1', decision: 'approve', by: 'bob', command: 'rm -rf build', callId: 'approved-apr-1' });
    });

    it('a rejection starts a run with no call; an automated or unknown decision starts nothing', () => {
      const next = startRun(pendingApproval(), { kind: 'approval', seq: 4, userId: 'bob', decision: { approvalId: 'apr-1', decision: 'reject', by: 'bob', automated: false } }, 'r2', at);
      expect(next.active!.pending).toBeNull();
      expect(isStale(pendingApproval(), { kind: 'approval', seq: 4, userId: 'bob', decision: { approvalId: 'apr-1', decision: 'approve', by: 'policy', automated: true } })).toBe(true);
      expect(isStale(pendingApproval(), { kind: 'approval', seq: 4, userId: 'bob', decision: { approvalId: 'nope', decision: 'approve', by: 'bob', automated: false } })).toBe(true);
    });

    it('never takes an approval id from the model', () => {
      const cp = afterModel(startRun(emptyCheckpoint(), message(1), 'r1', at), { toolCalls: [{ callId: 'c1', name: 'exec', args: { command: 'x' }, approvalId: 'forged' }] }, at);
      expect(cp.active!.pending!.calls[0]).toEqual({ callId: 'c1', name: 'exec', args: { command: 'x' } });
    });
  });
});
