import { assertNever, IllegalState, ValidationError, type Decider } from '@handplane/kernel';
import type { TaskStatus } from '../task/task.events';
import type { ConversationRunCommand, DeclareWait, FinishRun, RecordTaskLaunch, StartRun, UpdateTodos } from './conversation-run.commands';
import type { ConversationEvent, RunTrigger, Todo, TodosUpdated } from './conversation-run.events';
import { GuardViolation } from './conversation-run.errors';

/**
 * The run state of one conversation (DESIGN.md §3): `idle → running → (waiting | idle)`.
 * The todo plan lives beside the status because it outlives runs: a woken run continues it.
 */
export type ConversationRunState =
  | { readonly status: 'idle'; readonly todos: readonly Todo[] }
  | {
      readonly status: 'running';
      readonly runId: string;
      readonly userId: string;
      readonly trigger: RunTrigger;
      readonly taskId?: string;
      readonly todos: readonly Todo[];
      /** The validated wait of this run (empty = none). */
      readonly waitForTasks: readonly string[];
    }
  | { readonly status: 'waiting'; readonly taskIds: readonly string[]; readonly todos: readonly Todo[] };

/** The events this decider produces (a subset of the conversation's events). */
export type ConversationRunEvent = Extract<ConversationEvent, { type: 'run.started' | 'run.finished' | 'todos.updated' | 'wait.declared' }>;

const TERMINAL: ReadonlySet<string> = new Set<TaskStatus>(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/** True for a task status after which nothing runs any more. */
export function isTerminalTaskStatus(status: TaskStatus | 'unknown' | undefined): boolean {
  return status !== undefined && TERMINAL.has(status);
}

function initialState(): ConversationRunState {
  return { status: 'idle', todos: [] };
}

function evolve(state: ConversationRunState, event: ConversationEvent): ConversationRunState {
  switch (event.type) {
    case 'run.started': {
      const d = event.data;
      // A finished task satisfies its own part of a wait; the rest of the wait carries on.
      const carried = state.status === 'waiting' ? state.taskIds.filter((t) => t !== d.taskId) : [];
      return { status: 'running', runId: d.runId, userId: d.userId, trigger: d.trigger, ...(d.taskId ? { taskId: d.taskId } : {}), todos: state.todos, waitForTasks: carried };
    }
    case 'run.finished':
      if (state.status !== 'running') return state;
      return event.data.outcome === 'waiting' ? { status: 'waiting', taskIds: state.waitForTasks, todos: state.todos } : { status: 'idle', todos: state.todos };
    case 'todos.updated':
      if (state.status !== 'running') return { ...state, todos: event.data.todos };
      // An empty wait list ends the wait; a non-empty one only takes effect with `wait.declared`.
      return { ...state, todos: event.data.todos, waitForTasks: event.data.waitForTasks.length ? state.waitForTasks : [] };
    case 'wait.declared':
      return state.status === 'running' ? { ...state, waitForTasks: event.data.taskIds } : state;
    default:
      return state;
  }
}

function activeRun(state: ConversationRunState, runId: string) {
  if (state.status !== 'running') throw new IllegalState(`run ${runId} is not active: the conversation is ${state.status}`);
  if (state.runId !== runId) throw new IllegalState(`run ${runId} is not active: run ${state.runId} is`);
  return state;
}

function startRun(c: StartRun, state: ConversationRunState): ConversationRunEvent[] {
  const d = c.data;
  if (state.status === 'running') {
    if (state.runId === d.runId) return [];
    throw new IllegalState(`run ${state.runId} is active: at most one run per conversation`);
  }
  if (d.trigger === 'task_event' && !d.taskId) throw new ValidationError('a run woken by a task event names its task');
  if (d.trigger === 'message' && !d.messageId) throw new ValidationError('a run started by a message names the message');
  return [{ type: 'run.started', data: { ...d }, metadata: c.metadata }];
}

function finishRun(c: FinishRun, state: ConversationRunState): ConversationRunEvent[] {
  const run = activeRun(state, c.data.runId);
  const waiting = run.waitForTasks.length > 0;
  if (c.data.outcome === 'waiting' && !waiting) throw new IllegalState('a run can only finish as waiting while a validated wait is active');
  if (c.data.outcome === 'completed' && waiting) throw new IllegalState(`a wait on ${run.waitForTasks.join(', ')} is active: the run finishes as waiting`);
  return [{ type: 'run.finished', data: { ...c.data }, metadata: c.metadata }];
}

function checkTodoList(todos: readonly Todo[]): void {
  const issues: string[] = [];
  const ids = new Set<string>();
  for (const t of todos) {
    if (!t.id.trim()) issues.push('every todo needs an id');
    else if (ids.has(t.id)) issues.push(`todo id ${JSON.stringify(t.id)} is used twice`);
    ids.add(t.id);
    if (!t.content.trim()) issues.push(`todo ${JSON.stringify(t.id)} has no content`);
  }
  // One item in progress keeps the implicit binding of a launched task (G4) unambiguous.
  if (todos.filter((t) => t.status === 'in_progress').length > 1) issues.push('at most one todo can be in_progress at a time');
  if (issues.length) throw new ValidationError(`invalid todo list: ${issues.join('; ')}`, issues);
}

function updateTodos(c: UpdateTodos, state: ConversationRunState): ConversationRunEvent[] {
  activeRun(state, c.data.runId);
  checkTodoList(c.data.todos);
  const before = new Map(state.todos.map((t) => [t.id, t]));
  // Bindings are sticky: the model cannot unbind a task by leaving it out of `taskIds`.
  const todos = c.data.todos.map((t) => ({ ...t, taskIds: [...new Set([...(before.get(t.id)?.taskIds ?? []), ...t.taskIds])] }));
  const issues: string[] = [];
  for (const t of todos) {
    if (t.status !== 'completed') continue;
    for (const taskId of t.taskIds) {
      const status = c.data.taskStatuses[taskId] ?? 'unknown';
      if (!isTerminalTaskStatus(status)) issues.push(`todo ${JSON.stringify(t.content)} cannot be completed: its task ${taskId} has not finished (status: ${status})`);
    }
  }
  if (issues.length) {
    const unfinished = [...new Set(todos.filter((t) => t.status === 'completed').flatMap((t) => t.taskIds.filter((id) => !isTerminalTaskStatus(c.data.taskStatuses[id] ?? 'unknown'))))];
    throw new GuardViolation(
      'G4',
      `${issues.join('; ')}. Keep the todo in_progress, call write_todos with wait_for_tasks ${JSON.stringify(unfinished)} and end your turn: you will be woken when the task finishes.`,
      issues,
    );
  }
  return [todosUpdated(c.data.runId, todos, c.data.waitForTasks, c.metadata)];
}

function todosUpdated(runId: string, todos: Todo[], waitForTasks: readonly string[], metadata: UpdateTodos['metadata']): TodosUpdated {
  return { type: 'todos.updated', data: { runId, todos, waitForTasks: [...waitForTasks] }, metadata };
}

function declareWait(c: DeclareWait, state: ConversationRunState): ConversationRunEvent[] {
  activeRun(state, c.data.runId);
  const ids = [...new Set(c.data.taskIds)];
  if (ids.length === 0) throw new ValidationError('a wait names at least one task');
  const byId = new Map(c.data.validation.map((v) => [v.taskId, v]));
  const issues = ids.flatMap((id) => {
    const v = byId.get(id);
    if (!v) return [`task ${id} was not validated by the host`];
    return v.valid ? [] : [`task ${id}: ${v.reason ?? 'not a task you can wait for'}`];
  });
  if (issues.length) {
    throw new GuardViolation('G5', `wait_for_tasks rejected: ${issues.join('; ')}. Wait only for unfinished tasks of this conversation; read the output of finished ones instead.`, issues);
  }
  return [{ type: 'wait.declared', data: { runId: c.data.runId, taskIds: ids }, metadata: c.metadata }];
}

function recordTaskLaunch(c: RecordTaskLaunch, state: ConversationRunState): ConversationRunEvent[] {
  const run = activeRun(state, c.data.runId);
  const current = c.data.todoId ? run.todos.find((t) => t.id === c.data.todoId) : run.todos.find((t) => t.status === 'in_progress');
  if (!current || current.taskIds.includes(c.data.taskId)) return [];
  const todos = run.todos.map((t) => (t === current ? { ...t, taskIds: [...t.taskIds, c.data.taskId] } : t));
  return [todosUpdated(run.runId, todos, run.waitForTasks, c.metadata)];
}

function decide(command: ConversationRunCommand, state: ConversationRunState): ConversationRunEvent[] {
  switch (command.type) {
    case 'StartRun':
      return startRun(command, state);
    case 'FinishRun':
      return finishRun(command, state);
    case 'UpdateTodos':
      return updateTodos(command, state);
    case 'DeclareWait':
      return declareWait(command, state);
    case 'RecordTaskLaunch':
      return recordTaskLaunch(command, state);
    default:
      return assertNever(command, 'conversation run command');
  }
}

/**
 * The ConversationRun decider: at most one active run per conversation; G4 (a todo bound to an
 * unfinished task is never completed) and G5 (a wait only on tasks the host validated).
 * It evolves over conversation events and ignores the ones that are not its own.
 */
export const conversationRunDecider = { initialState, evolve, decide } satisfies Decider<ConversationRunState, ConversationRunCommand, ConversationEvent>;
