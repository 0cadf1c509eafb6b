import { IllegalState, ValidationError, fold, type Metadata } from '@handplane/kernel';
import type { ConversationRunCommand } from './conversation-run.commands';
import { conversationRunDecider as decider, type ConversationRunEvent } from './conversation-run.decider';
import { GuardViolation } from './conversation-run.errors';
import type { ConversationEvent, Todo } from './conversation-run.events';

const metadata: Metadata = { at: '2026-01-01T00:00:00.000Z', actor: 'alice' };

/** Given a history, when a command is decided, then these events (or this error). */
function given(history: ConversationEvent[]) {
  const state = fold(decider, history);
  return {
    state,
    when: (command: ConversationRunCommand) => ({
      then: (expected: ConversationRunEvent[]) => expect(decider.decide(command, state)).toEqual(expected),
      thenThrows: (cls: new (...a: never[]) => Error, pattern?: RegExp) => {
        let caught: unknown;
        try {
          decider.decide(command, state);
        } catch (e) {
          caught = e;
        }
        expect(caught).toBeInstanceOf(cls);
        if (pattern) expect((caught as Error).message).toMatch(pattern);
        return caught as Error;
      },
    }),
  };
}

const todo = (id: string, status: Todo['status'], taskIds: string[] = []): Todo => ({ id, content: `run ${id}`, status, taskIds });
const started = (runId: string, extra: { trigger?: 'message' | 'task_event'; taskId?: string; userId?: string } = {}): ConversationEvent => ({
  type: 'run.started',
  data: {
    runId,
    userId: extra.userId ?? 'alice',
    trigger: extra.trigger ?? 'message',
    ...(extra.taskId ? { taskId: extra.taskId } : { messageId: 'm1' }),
  },
  metadata,
});
const finished = (runId: string, outcome: 'completed' | 'waiting'): ConversationEvent => ({ type: 'run.finished', data: { runId, outcome }, metadata });
const todosUpdated = (runId: string, todos: Todo[], waitForTasks: string[] = []): ConversationEvent => ({ type: 'todos.updated', data: { runId, todos, waitForTasks }, metadata });
const waitDeclared = (runId: string, taskIds: string[]): ConversationEvent => ({ type: 'wait.declared', data: { runId, taskIds }, metadata });
const updateTodos = (runId: string, todos: Todo[], taskStatuses: Record<string, 'running' | 'succeeded' | 'unknown'> = {}, waitForTasks: string[] = []): ConversationRunCommand => ({
  type: 'UpdateTodos',
  data: { runId, todos, waitForTasks, taskStatuses },
  metadata,
});

describe('ConversationRun decider', () => {
  describe('StartRun', () => {
    it('starts a run in an idle conversation', () => {
      given([])
        .when({ type: 'StartRun', data: { runId: 'r1', userId: 'alice', trigger: 'message', messageId: 'm1' }, metadata })
        .then([{ type: 'run.started', data: { runId: 'r1', userId: 'alice', trigger: 'message', messageId: 'm1' }, metadata }]);
    });

    it('refuses a second active run', () => {
      given([started('r1')])
        .when({ type: 'StartRun', data: { runId: 'r2', userId: 'bob', trigger: 'message', messageId: 'm2' }, metadata })
        .thenThrows(IllegalState, /at most one run/);
    });

    it('is idempotent for the run that is already active', () => {
      given([started('r1')]).when({ type: 'StartRun', data: { runId: 'r1', userId: 'alice', trigger: 'message', messageId: 'm1' }, metadata }).then([]);
    });

    it('wakes a waiting conversation for a task event, as the originating user', () => {
      const g = given([started('r1'), waitDeclared('r1', ['t1']), finished('r1', 'waiting')]);
      expect(g.state).toMatchObject({ status: 'waiting', taskIds: ['t1'] });
      g.when({ type: 'StartRun', data: { runId: 'r2', userId: 'alice', trigger: 'task_event', taskId: 't1' }, metadata }).then([
        { type: 'run.started', data: { runId: 'r2', userId: 'alice', trigger: 'task_event', taskId: 't1' }, metadata },
      ]);
    });

    it('needs the task of a task event', () => {
      given([]).when({ type: 'StartRun', data: { runId: 'r1', userId: 'alice', trigger: 'task_event' }, metadata }).thenThrows(ValidationError);
    });
  });

  describe('waits', () => {
    it('keeps the rest of a wait when one of its tasks wakes the conversation', () => {
      const { state } = given([started('r1'), waitDeclared('r1', ['t1', 't2']), finished('r1', 'waiting'), started('r2', { trigger: 'task_event', taskId: 't1' })]);
      expect(state).toMatchObject({ status: 'running', runId: 'r2', waitForTasks: ['t2'] });
    });

    it('declares a wait on tasks the host validated', () => {
      given([started('r1')])
        .when({ type: 'DeclareWait', data: { runId: 'r1', taskIds: ['t1'], validation: [{ taskId: 't1', valid: true }] }, metadata })
        .then([{ type: 'wait.declared', data: { runId: 'r1', taskIds: ['t1'] }, metadata }]);
    });

    it('rejects a wait when the host refused any task, with the reasons (G5)', () => {
      const e = given([started('r1')])
        .when({
          type: 'DeclareWait',
          data: { runId: 'r1', taskIds: ['t1', 'nope'], validation: [{ taskId: 't1', valid: true }, { taskId: 'nope', valid: false, reason: 'unknown task' }] },
          metadata,
        })
        .thenThrows(GuardViolation, /nope: unknown task/);
      expect((e as GuardViolation).rule).toBe('G5');
    });

    it('rejects a wait on a task the host was never asked about (G5)', () => {
      given([started('r1')])
        .when({ type: 'DeclareWait', data: { runId: 'r1', taskIds: ['t9'], validation: [] }, metadata })
        .thenThrows(GuardViolation, /not validated/);
    });

    it('refuses a wait outside a run', () => {
      given([]).when({ type: 'DeclareWait', data: { runId: 'r1', taskIds: ['t1'], validation: [{ taskId: 't1', valid: true }] }, metadata }).thenThrows(IllegalState);
    });

    it('clears the wait when the model writes its todos without one', () => {
      const { state } = given([started('r1'), waitDeclared('r1', ['t1']), todosUpdated('r1', [todo('a', 'in_progress')])]);
      expect(state).toMatchObject({ status: 'running', waitForTasks: [] });
    });
  });

  describe('FinishRun', () => {
    it('finishes as waiting with a validated wait', () => {
      const g = given([started('r1'), waitDeclared('r1', ['t1'])]);
      g.when({ type: 'FinishRun', data: { runId: 'r1', outcome: 'waiting' }, metadata }).then([{ type: 'run.finished', data: { runId: 'r1', outcome: 'waiting' }, metadata }]);
      g.when({ type: 'FinishRun', data: { runId: 'r1', outcome: 'completed' }, metadata }).thenThrows(IllegalState, /finishes as waiting/);
    });

    it('cannot finish as waiting without a wait', () => {
      given([started('r1')]).when({ type: 'FinishRun', data: { runId: 'r1', outcome: 'waiting' }, metadata }).thenThrows(IllegalState, /validated wait/);
    });

    it('cannot finish a run that is not the active one', () => {
      given([started('r1')]).when({ type: 'FinishRun', data: { runId: 'r0', outcome: 'completed' }, metadata }).thenThrows(IllegalState);
      given([]).when({ type: 'FinishRun', data: { runId: 'r1', outcome: 'completed' }, metadata }).thenThrows(IllegalState);
    });

    it('returns to idle and keeps the plan for the next run', () => {
      const { state } = given([started('r1'), todosUpdated('r1', [todo('a', 'completed')]), finished('r1', 'completed')]);
      expect(state).toEqual({ status: 'idle', todos: [todo('a', 'completed')] });
    });
  });

  describe('UpdateTodos and G4', () => {
    it('accepts a valid list and shows the wait beside it', () => {
      given([started('r1')])
        .when(updateTodos('r1', [todo('a', 'in_progress'), todo('b', 'pending')], {}, ['t1']))
        .then([todosUpdated('r1', [todo('a', 'in_progress'), todo('b', 'pending')], ['t1']) as ConversationRunEvent]);
    });

    it('binds a launched task to the todo in progress (implicit binding)', () => {
      given([started('r1'), todosUpdated('r1', [todo('a', 'completed'), todo('b', 'in_progress')])])
        .when({ type: 'RecordTaskLaunch', data: { runId: 'r1', taskId: 't1' }, metadata })
        .then([todosUpdated('r1', [todo('a', 'completed'), todo('b', 'in_progress', ['t1'])]) as ConversationRunEvent]);
    });

    it('binds to the todo the model saw in progress, even if a later call of the same response moved on', () => {
      given([started('r1'), todosUpdated('r1', [todo('a', 'pending'), todo('b', 'in_progress')])])
        .when({ type: 'RecordTaskLaunch', data: { runId: 'r1', taskId: 't1', todoId: 'a' }, metadata })
        .then([todosUpdated('r1', [todo('a', 'pending', ['t1']), todo('b', 'in_progress')]) as ConversationRunEvent]);
    });

    it('refuses to bind a launched task to a todo an earlier call of the same response completed (G4, G8)', () => {
      // Changed on purpose: binding it would leave a running task under a completed todo.
      const e = given([started('r1'), todosUpdated('r1', [todo('a', 'completed'), todo('b', 'in_progress')])])
        .when({ type: 'RecordTaskLaunch', data: { runId: 'r1', taskId: 't1', todoId: 'a' }, metadata })
        .thenThrows(GuardViolation, /marked completed by an earlier call/);
      expect((e as GuardViolation).rule).toBe('G4');
    });

    it('binds nothing when no todo is in progress, or when already bound', () => {
      given([started('r1'), todosUpdated('r1', [todo('a', 'pending')])]).when({ type: 'RecordTaskLaunch', data: { runId: 'r1', taskId: 't1' }, metadata }).then([]);
      given([started('r1'), todosUpdated('r1', [todo('a', 'in_progress', ['t1'])])]).when({ type: 'RecordTaskLaunch', data: { runId: 'r1', taskId: 't1' }, metadata }).then([]);
    });

    it('refuses to complete a todo implicitly bound to a running task, telling the model to wait (G4)', () => {
      const e = given([started('r1'), todosUpdated('r1', [todo('a', 'in_progress', ['t1'])])])
        .when(updateTodos('r1', [todo('a', 'completed')], { t1: 'running' }))
        .thenThrows(GuardViolation, /cannot be completed: its task t1 has not finished \(status: running\).*wait_for_tasks \["t1"\]/);
      expect((e as GuardViolation).rule).toBe('G4');
    });

    it('refuses to complete a todo explicitly bound to a running task (G4)', () => {
      given([started('r1')])
        .when(updateTodos('r1', [todo('a', 'completed', ['t2'])], { t2: 'running' }))
        .thenThrows(GuardViolation, /t2/);
    });

    it('treats a task whose status is unknown as unfinished (G4)', () => {
      given([started('r1')]).when(updateTodos('r1', [todo('a', 'completed', ['t3'])])).thenThrows(GuardViolation, /status: unknown/);
    });

    it('completes a todo once its task has finished, keeping the binding', () => {
      given([started('r1'), todosUpdated('r1', [todo('a', 'in_progress', ['t1'])])])
        .when(updateTodos('r1', [todo('a', 'completed')], { t1: 'succeeded' }))
        .then([todosUpdated('r1', [todo('a', 'completed', ['t1'])]) as ConversationRunEvent]);
    });

    it('rejects malformed lists', () => {
      const g = given([started('r1')]);
      g.when(updateTodos('r1', [todo('a', 'pending'), todo('a', 'pending')])).thenThrows(ValidationError, /used twice/);
      g.when(updateTodos('r1', [todo('a', 'in_progress'), todo('b', 'in_progress')])).thenThrows(ValidationError, /at most one/);
      g.when(updateTodos('r1', [{ ...todo('a', 'pending'), content: ' ' }])).thenThrows(ValidationError, /no content/);
    });

    it('refuses todo updates outside the active run', () => {
      given([]).when(updateTodos('r1', [todo('a', 'pending')])).thenThrows(IllegalState);
    });
  });
});
