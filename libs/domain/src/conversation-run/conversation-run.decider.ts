import { assertNever, IllegalState, ValidationError, type Decider } from '@handplane/kernel';
import type { TaskStatus } from '../task/task.events';
import type {
  AskQuestion,
  ConversationRunCommand,
  DeclareWait,
  FinishRun,
  RecordTaskLaunch,
  RequestApproval,
  StartRun,
  SteerRun,
  UpdateTodos,
} from './conversation-run.commands';
import type { ConversationEvent, RunTrigger, Todo, TodosUpdated } from './conversation-run.events';
import { GuardViolation } from './conversation-run.errors';

/** A question or an approval that waits for a person (G7, G10). */
export interface OpenRequest {
  readonly kind: 'question' | 'approval';
  readonly id: string;
  readonly runId: string;
  /** The user the asking run acted for: a run started by the decision acts for them again (G9). */
  readonly userId: string;
}

/** What every status carries: the plan outlives runs, and so do open requests. `open` is omitted when empty. */
interface Shared {
  readonly todos: readonly Todo[];
  readonly open?: readonly OpenRequest[];
}

/**
 * The run state of one conversation (DESIGN.md §3): `idle → running → (waiting | idle)`.
 * The todo plan lives beside the status because it outlives runs: a woken run continues it.
 */
export type ConversationRunState =
  | ({ readonly status: 'idle' } & Shared)
  | ({
      readonly status: 'running';
      readonly runId: string;
      readonly userId: string;
      readonly trigger: RunTrigger;
      readonly taskId?: string;
      /** The validated wait of this run (empty = none). */
      readonly waitForTasks: readonly string[];
    } & Shared)
  | ({ readonly status: 'waiting'; readonly taskIds: readonly string[] } & Shared);

/** The events this decider produces (a subset of the conversation's events). */
export type ConversationRunEvent = Extract<
  ConversationEvent,
  { type: 'run.started' | 'run.finished' | 'todos.updated' | 'wait.declared' | 'wait.invalidated' | 'question.asked' | 'approval.requested' | 'approval.resolved' }
>;

const TERMINAL: ReadonlySet<string> = new Set<TaskStatus>(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/** True for a task status after which nothing runs any more. */
export function isTerminalTaskStatus(status: TaskStatus | 'unknown' | undefined): boolean {
  return status !== undefined && TERMINAL.has(status);
}

function initialState(): ConversationRunState {
  return { status: 'idle', todos: [] };
}

/** The state with `open` replaced (omitted when empty, so states compare equal however they got there). */
function withOpen<S extends ConversationRunState>(state: S, open: readonly OpenRequest[]): S {
  const { open: _drop, ...rest } = state;
  return (open.length ? { ...rest, open } : rest) as S;
}

function openRequests(state: ConversationRunState): readonly OpenRequest[] {
  return state.open ?? [];
}

function addOpen(state: ConversationRunState, r: OpenRequest): ConversationRunState {
  const open = openRequests(state);
  return open.some((o) => o.id === r.id) ? state : withOpen(state, [...open, r]);
}

function shared(state: ConversationRunState): Shared {
  return state.open ? { todos: state.todos, open: state.open } : { todos: state.todos };
}

function evolve(state: ConversationRunState, event: ConversationEvent): ConversationRunState {
  switch (event.type) {
    case 'run.started': {
      const d = event.data;
      // A finished task satisfies its own part of a wait; the rest of the wait carries on.
      const carried = state.status === 'waiting' ? state.taskIds.filter((t) => t !== d.taskId) : [];
      return { status: 'running', runId: d.runId, userId: d.userId, trigger: d.trigger, ...(d.taskId ? { taskId: d.taskId } : {}), ...shared(state), waitForTasks: carried };
    }
    case 'run.finished':
      if (state.status !== 'running') return state;
      return event.data.outcome === 'waiting' ? { status: 'waiting', taskIds: state.waitForTasks, ...shared(state) } : { status: 'idle', ...shared(state) };
    case 'todos.updated':
      if (state.status !== 'running') return { ...state, todos: event.data.todos };
      // An empty wait list ends the wait; a non-empty one only takes effect with `wait.declared`.
      return { ...state, todos: event.data.todos, waitForTasks: event.data.waitForTasks.length ? state.waitForTasks : [] };
    case 'wait.declared':
      return state.status === 'running' ? { ...state, waitForTasks: event.data.taskIds } : state;
    case 'wait.invalidated':
      if (state.status === 'running') return { ...state, waitForTasks: [] };
      return state.status === 'waiting' ? { status: 'idle', ...shared(state) } : state;
    case 'question.asked':
      return addOpen(state, { kind: 'question', id: event.data.questionId, runId: event.data.runId, userId: event.metadata.actor ?? '' });
    case 'approval.requested':
      return addOpen(state, { kind: 'approval', id: event.data.approvalId, runId: event.data.runId, userId: event.metadata.actor ?? '' });
    case 'question.answered':
      return withOpen(state, openRequests(state).filter((o) => o.id !== event.data.questionId));
    case 'approval.resolved':
      return withOpen(state, openRequests(state).filter((o) => o.id !== event.data.approvalId));
    default:
      return state;
  }
}

function activeRun(state: ConversationRunState, runId: string) {
  if (state.status !== 'running') throw new IllegalState(`run ${runId} is not active: the conversation is ${state.status}`);
  if (state.runId !== runId) throw new IllegalState(`run ${runId} is not active: run ${state.runId} is`);
  return state;
}

const REQUIRED: Record<RunTrigger, 'taskId' | 'messageId' | 'questionId' | 'approvalId'> = {
  task_event: 'taskId',
  message: 'messageId',
  answer: 'questionId',
  approval: 'approvalId',
};

function startRun(c: StartRun, state: ConversationRunState): ConversationRunEvent[] {
  const d = c.data;
  if (state.status === 'running') {
    if (state.runId === d.runId) return [];
    throw new IllegalState(`run ${state.runId} is active: at most one run per conversation`);
  }
  if (!d[REQUIRED[d.trigger]]) throw new ValidationError(`a run started by ${d.trigger} names its ${REQUIRED[d.trigger]}`);
  const started: ConversationRunEvent = { type: 'run.started', data: { ...d }, metadata: c.metadata };
  // G7: human input ends the wait and starts a turn at once; a task event keeps the rest of it.
  if (d.trigger !== 'task_event' && state.status === 'waiting' && state.taskIds.length) {
    return [{ type: 'wait.invalidated', data: { reason: d.trigger, taskIds: [...state.taskIds] }, metadata: c.metadata }, started];
  }
  return [started];
}

function steerRun(c: SteerRun, state: ConversationRunState): ConversationRunEvent[] {
  const run = activeRun(state, c.data.runId);
  if (!run.waitForTasks.length) return [];
  return [{ type: 'wait.invalidated', data: { reason: 'message', runId: run.runId, taskIds: [...run.waitForTasks] }, metadata: c.metadata }];
}

function finishRun(c: FinishRun, state: ConversationRunState): ConversationRunEvent[] {
  const run = activeRun(state, c.data.runId);
  const waiting = run.waitForTasks.length > 0 || openRequests(run).length > 0;
  if (c.data.outcome === 'waiting' && !waiting) throw new IllegalState('a run can only finish as waiting while a validated wait or an open question or approval is active');
  if (c.data.outcome === 'completed' && waiting) throw new IllegalState(`a wait is active (${[...run.waitForTasks, ...openRequests(run).map((o) => o.id)].join(', ')}): the run finishes as waiting`);
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
  const unfinished = (id: string) => !isTerminalTaskStatus(c.data.taskStatuses[id] ?? 'unknown');
  const issues = todos
    .filter((t) => t.status === 'completed')
    .flatMap((t) => t.taskIds.filter(unfinished).map((id) => `todo ${JSON.stringify(t.content)} cannot be completed: its task ${id} has not finished (status: ${c.data.taskStatuses[id] ?? 'unknown'})`));
  if (issues.length) {
    const ids = [...new Set(todos.filter((t) => t.status === 'completed').flatMap((t) => t.taskIds.filter(unfinished)))];
    throw new GuardViolation(
      'G4',
      `${issues.join('; ')}. Keep the todo in_progress, call write_todos with wait_for_tasks ${JSON.stringify(ids)} and end your turn: you will be woken when the task finishes.`,
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

/**
 * The todo a task launched now by `runId` binds to (G4): `todoId` (the one in progress in the
 * model's snapshot) or else the one in progress now; undefined when there is none. Throws when
 * that todo was completed meanwhile (an earlier call of the same response): a running task bound
 * to a completed todo would be a faked completion. Called before the task starts, and again when
 * its launch is recorded.
 */
export function checkTaskLaunch(state: ConversationRunState, runId: string, todoId?: string): Todo | undefined {
  const run = activeRun(state, runId);
  const target = todoId ? run.todos.find((t) => t.id === todoId) : run.todos.find((t) => t.status === 'in_progress');
  if (target?.status === 'completed') {
    throw new GuardViolation(
      'G4',
      `todo ${JSON.stringify(target.content)} was marked completed by an earlier call of this response, but this command was launched for it. Set the todo the command belongs to in_progress with write_todos, then call exec again in a later response.`,
    );
  }
  return target;
}

function recordTaskLaunch(c: RecordTaskLaunch, state: ConversationRunState): ConversationRunEvent[] {
  const run = activeRun(state, c.data.runId);
  const current = checkTaskLaunch(state, c.data.runId, c.data.todoId);
  if (!current || current.taskIds.includes(c.data.taskId)) return [];
  const todos = run.todos.map((t) => (t === current ? { ...t, taskIds: [...t.taskIds, c.data.taskId] } : t));
  return [todosUpdated(run.runId, todos, run.waitForTasks, c.metadata)];
}

function askQuestion(c: AskQuestion, state: ConversationRunState): ConversationRunEvent[] {
  activeRun(state, c.data.runId);
  if (openRequests(state).some((o) => o.id === c.data.questionId)) return [];
  if (!c.data.text.trim()) throw new ValidationError('a question needs text');
  return [{ type: 'question.asked', data: { ...c.data }, metadata: c.metadata }];
}

function requestApproval(c: RequestApproval, state: ConversationRunState): ConversationRunEvent[] {
  const { runId, approvalId, command, reason, automated } = c.data;
  activeRun(state, runId);
  if (openRequests(state).some((o) => o.id === approvalId)) return [];
  const requested: ConversationRunEvent = { type: 'approval.requested', data: { approvalId, runId, command, reason }, metadata: c.metadata };
  if (!automated) return [requested];
  return [requested, { type: 'approval.resolved', data: { approvalId, decision: 'approve', by: 'policy', automated: true }, metadata: c.metadata }];
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
    case 'SteerRun':
      return steerRun(command, state);
    case 'AskQuestion':
      return askQuestion(command, state);
    case 'RequestApproval':
      return requestApproval(command, state);
    default:
      return assertNever(command, 'conversation run command');
  }
}

/**
 * The ConversationRun decider: at most one active run per conversation; G4 (a todo bound to an
 * unfinished task is never completed), G5 (a wait only on tasks the host validated) and G7 (human
 * input ends a wait). It evolves over conversation events and ignores the ones that are not its own.
 */
export const conversationRunDecider = { initialState, evolve, decide } satisfies Decider<ConversationRunState, ConversationRunCommand, ConversationEvent>;
