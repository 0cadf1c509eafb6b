import { IllegalState, ValidationError, fold, type Metadata } from '@handplane/kernel';
import type { ConversationRunCommand } from './conversation-run.commands';
import { conversationRunDecider as decider, type ConversationRunState } from './conversation-run.decider';
import type { ConversationEvent, Todo } from './conversation-run.events';
import { admitsWakeups, hasActiveWait, suspensionIssue } from './conversation-run.rules';

const metadata: Metadata = { at: '2026-01-01T00:00:00.000Z', actor: 'alice' };
const todo = (id: string, status: Todo['status'], taskIds: string[] = []): Todo => ({ id, content: `run ${id}`, status, taskIds });
const started = (runId: string, trigger: 'message' | 'task_event' = 'message', taskId?: string): ConversationEvent => ({
  type: 'run.started',
  data: { runId, userId: 'alice', trigger, ...(taskId ? { taskId } : { messageId: 'm1' }) },
  metadata,
});
const waitDeclared = (runId: string, taskIds: string[]): ConversationEvent => ({ type: 'wait.declared', data: { runId, taskIds }, metadata });
const finished = (runId: string, outcome: 'completed' | 'waiting'): ConversationEvent => ({ type: 'run.finished', data: { runId, outcome }, metadata });
const todos = (runId: string, list: Todo[]): ConversationEvent => ({ type: 'todos.updated', data: { runId, todos: list, waitForTasks: [] }, metadata });
const asked = (runId: string, questionId: string): ConversationEvent => ({ type: 'question.asked', data: { runId, questionId, text: 'which?' }, metadata });
const answered = (questionId: string): ConversationEvent => ({ type: 'question.answered', data: { questionId, text: 'this one', by: 'bob' }, metadata: { at: metadata.at, actor: 'bob' } });
const decide = (history: ConversationEvent[], c: ConversationRunCommand) => decider.decide(c, fold(decider, history));
const state = (history: ConversationEvent[]): ConversationRunState => fold(decider, history);

describe('ConversationRun governance', () => {
  describe('G7: human input ends a wait, a task event and automated approvals keep it', () => {
    const waiting = [started('r1'), waitDeclared('r1', ['t1', 't2']), finished('r1', 'waiting')];

    it.each([
      ['message', { messageId: 'm2' }],
      ['answer', { questionId: 'q1' }],
      ['approval', { approvalId: 'a1' }],
    ] as const)('a run started by %s invalidates the wait first, then starts with none', (trigger, ids) => {
      const events = decide(waiting, { type: 'StartRun', data: { runId: 'r2', userId: 'bob', trigger, ...ids }, metadata });
      expect(events.map((e) => e.type)).toEqual(['wait.invalidated', 'run.started']);
      expect(events[0]!.data).toEqual({ reason: trigger, taskIds: ['t1', 't2'] });
      expect(state([...waiting, ...events])).toMatchObject({ status: 'running', runId: 'r2', waitForTasks: [] });
    });

    it('a run woken by one of the waited tasks keeps waiting for the others, without an invalidation', () => {
      const events = decide(waiting, { type: 'StartRun', data: { runId: 'r2', userId: 'alice', trigger: 'task_event', taskId: 't1' }, metadata });
      expect(events.map((e) => e.type)).toEqual(['run.started']);
      expect(state([...waiting, ...events])).toMatchObject({ waitForTasks: ['t2'] });
    });

    it('a steering message invalidates the wait of the active run; without a wait it changes nothing', () => {
      const running = [started('r1'), waitDeclared('r1', ['t1'])];
      const events = decide(running, { type: 'SteerRun', data: { runId: 'r1', messageId: 'm2' }, metadata });
      expect(events).toEqual([{ type: 'wait.invalidated', data: { reason: 'message', runId: 'r1', taskIds: ['t1'] }, metadata }]);
      expect(state([...running, ...events])).toMatchObject({ waitForTasks: [] });
      expect(decide([started('r1')], { type: 'SteerRun', data: { runId: 'r1', messageId: 'm2' }, metadata })).toEqual([]);
    });

    it('an automated approval is decided by the policy at once and leaves the wait as it was', () => {
      const running = [started('r1'), waitDeclared('r1', ['t1'])];
      const events = decide(running, { type: 'RequestApproval', data: { runId: 'r1', approvalId: 'a1', command: 'ls', reason: 'policy', automated: true }, metadata });
      expect(events.map((e) => [e.type, e.data])).toEqual([
        ['approval.requested', { approvalId: 'a1', runId: 'r1', command: 'ls', reason: 'policy' }],
        ['approval.resolved', { approvalId: 'a1', decision: 'approve', by: 'policy', automated: true }],
      ]);
      const after = state([...running, ...events]);
      expect(after).toMatchObject({ waitForTasks: ['t1'] });
      expect(after.open).toBeUndefined();
    });

    it('needs the id that goes with the trigger', () => {
      expect(() => decide([], { type: 'StartRun', data: { runId: 'r1', userId: 'bob', trigger: 'answer' }, metadata })).toThrow(ValidationError);
      expect(() => decide([], { type: 'StartRun', data: { runId: 'r1', userId: 'bob', trigger: 'approval' }, metadata })).toThrow(ValidationError);
    });
  });

  describe('questions and approvals waiting for a person', () => {
    it('a question stays open until answered, and lets the run finish as waiting', () => {
      const h = [started('r1'), asked('r1', 'q1')];
      expect(state(h).open).toEqual([{ kind: 'question', id: 'q1', runId: 'r1', userId: 'alice' }]);
      expect(decide(h, { type: 'FinishRun', data: { runId: 'r1', outcome: 'waiting' }, metadata }).map((e) => e.type)).toEqual(['run.finished']);
      expect(() => decide(h, { type: 'FinishRun', data: { runId: 'r1', outcome: 'completed' }, metadata })).toThrow(IllegalState);
      const after = state([...h, finished('r1', 'waiting'), answered('q1')]);
      expect(after).toEqual({ status: 'waiting', taskIds: [], todos: [] });
    });

    it('asking the same question again (a redone call) decides nothing', () => {
      expect(decide([started('r1'), asked('r1', 'q1')], { type: 'AskQuestion', data: { runId: 'r1', questionId: 'q1', text: 'which?' }, metadata })).toEqual([]);
      expect(() => decide([started('r1')], { type: 'AskQuestion', data: { runId: 'r1', questionId: 'q2', text: ' ' }, metadata })).toThrow(ValidationError);
    });

    it('a human approval stays open until a person decides', () => {
      const h = [started('r1')];
      const events = decide(h, { type: 'RequestApproval', data: { runId: 'r1', approvalId: 'a1', command: 'rm -rf build', reason: 'matches ^rm', automated: false }, metadata });
      expect(events.map((e) => e.type)).toEqual(['approval.requested']);
      const s = state([...h, ...events]);
      expect(s.open).toEqual([{ kind: 'approval', id: 'a1', runId: 'r1', userId: 'alice' }]);
      expect(admitsWakeups(s)).toBe(false);
      const resolved: ConversationEvent = { type: 'approval.resolved', data: { approvalId: 'a1', decision: 'reject', by: 'bob', automated: false }, metadata };
      expect(admitsWakeups(state([...h, ...events, resolved]))).toBe(true);
    });
  });

  describe('G6: the suspension guard', () => {
    it('objects to ending a turn with unfinished todos and no wait, naming them', () => {
      const s = state([started('r1'), todos('r1', [todo('a', 'completed'), todo('b', 'in_progress', ['t1']), todo('c', 'pending')])]);
      const issue = suspensionIssue(s)!;
      expect(issue).toContain('"run b" (in_progress, tasks t1)');
      expect(issue).toContain('"run c" (pending)');
      expect(issue).toMatch(/wait_for_tasks/);
      expect(hasActiveWait(s)).toBe(false);
    });

    it('lets the run end when every todo is completed, or a validated wait or an open question backs them', () => {
      expect(suspensionIssue(state([started('r1'), todos('r1', [todo('a', 'completed')])]))).toBeUndefined();
      expect(suspensionIssue(state([started('r1'), todos('r1', [todo('a', 'in_progress')]), waitDeclared('r1', ['t1'])]))).toBeUndefined();
      expect(suspensionIssue(state([started('r1'), todos('r1', [todo('a', 'in_progress')]), asked('r1', 'q1')]))).toBeUndefined();
      expect(suspensionIssue(state([]))).toBeUndefined();
    });
  });
});
