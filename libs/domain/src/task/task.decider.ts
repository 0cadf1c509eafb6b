import { assertNever, IllegalState, NotFound, type Decider, type Metadata } from '@handplane/kernel';
import type { BackgroundTask, FailStart, FinishTask, RegisterTask, RequestStop, StartTask, TaskCommand } from './task.commands';
import type { StopReason, TaskEvent, TaskFinished, TaskRegistered, TerminalTaskStatus } from './task.events';

/** What a task was registered with (everything but the environment, which only the runner needs). */
export type TaskFacts = Omit<TaskRegistered['data'], 'env'>;

/** The stop request a stopping task is carrying out. */
export interface StopRequest {
  readonly reason: StopReason;
  readonly requestedBy: string;
  readonly requestedAt: string;
}

interface Registered {
  readonly task: TaskFacts;
  readonly background: boolean;
  /** Runner that accepted the command; null until Exec answered. */
  readonly runnerId: string | null;
  readonly startedAt: string | null;
  /** Set once the start failed (TaskStartFailed); the TaskFinished that follows makes it terminal. */
  readonly startFailure: string | null;
}

/** The task aggregate's state: a union on `status` ('none' before registration). */
export type TaskState =
  | { readonly status: 'none' }
  | (Registered & { readonly status: 'starting' })
  | (Registered & { readonly status: 'running'; readonly runnerId: string; readonly startedAt: string })
  | (Registered & { readonly status: 'stopping'; readonly stop: StopRequest })
  | (Registered & {
      readonly status: TerminalTaskStatus;
      readonly exitCode: number | null;
      readonly signal: string | null;
      readonly resultState: 'readable' | 'unavailable';
      readonly outputBytes: number;
      readonly finishedAt: string;
    });

/** The terminal statuses, for readers that filter on them. */
export const TERMINAL_TASK_STATUSES: readonly TerminalTaskStatus[] = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/** True once the task can no longer change status. */
export function isTerminalStatus(status: TaskState['status']): status is TerminalTaskStatus {
  return (TERMINAL_TASK_STATUSES as readonly string[]).includes(status);
}

const meta = (m: Metadata): Metadata => ({ at: m.at, ...(m.actor ? { actor: m.actor } : {}), ...(m.traceparent ? { traceparent: m.traceparent } : {}) });

function factsOf(data: TaskRegistered['data']): TaskFacts {
  const { env: _env, ...facts } = data;
  void _env;
  return facts;
}

/**
 * How a finished command maps to the task's terminal status. A signal is the stop we asked for
 * (cancelled, or timed_out for a deadline) only when a stop was requested; otherwise a signal is a
 * failure. No exit information at all with missing bytes means the host was lost.
 */
export function finishedStatus(stop: StopRequest | null, r: FinishTask['data']): TerminalTaskStatus {
  if (r.signal !== null) {
    if (!stop) return 'failed';
    switch (stop.reason) {
      case 'deadline':
        return 'timed_out';
      case 'user':
      case 'stop_all':
      case 'policy':
        return 'cancelled';
      default:
        return assertNever(stop.reason, 'stop reason');
    }
  }
  if (r.exitCode === 0) return 'succeeded';
  if (r.exitCode !== null) return 'failed';
  return r.resultState === 'unavailable' ? 'lost' : 'failed';
}

function finished(s: Registered, status: TerminalTaskStatus, r: FinishTask['data'], m: Metadata): TaskFinished {
  const { taskId, commandId, attempt } = s.task;
  return {
    type: 'TaskFinished',
    data: { taskId, commandId, attempt, status, exitCode: r.exitCode, signal: r.signal, resultState: r.resultState, outputBytes: r.outputBytes, finishedAt: m.at },
    metadata: meta(m),
  };
}

function register(c: RegisterTask, s: TaskState): TaskEvent[] {
  if (s.status === 'none') return [{ type: 'TaskRegistered', data: { ...c.data, registeredAt: c.metadata.at }, metadata: meta(c.metadata) }];
  const t = s.task;
  const same = t.commandId === c.data.commandId && t.tenant === c.data.tenant && t.conversationId === c.data.conversationId && t.userId === c.data.userId && t.command === c.data.command;
  if (!same) throw new IllegalState('this request id already registered a different task');
  return [];
}

function start(c: StartTask, s: TaskState): TaskEvent[] {
  if (s.status === 'none') throw new NotFound('unknown task');
  if (isTerminalStatus(s.status)) throw new IllegalState(`task already finished (${s.status})`);
  if (s.runnerId !== null) {
    if (s.runnerId === c.data.runnerId) return [];
    throw new IllegalState(`task already started on runner ${s.runnerId}`);
  }
  if (s.startFailure !== null) throw new IllegalState('task start already failed');
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskStarted', data: { taskId, commandId, attempt, runnerId: c.data.runnerId, startedAt: c.metadata.at }, metadata: meta(c.metadata) }];
}

function failStart(c: FailStart, s: TaskState): TaskEvent[] {
  if (s.status === 'none') throw new NotFound('unknown task');
  if (isTerminalStatus(s.status)) {
    if (s.startFailure !== null) return [];
    throw new IllegalState(`task already finished (${s.status})`);
  }
  if (s.runnerId !== null) throw new IllegalState('task already started');
  const fin = finished(s, 'failed', { exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 }, c.metadata);
  // A start failure recorded without its TaskFinished (the second append was lost) only needs the finish.
  if (s.startFailure !== null) return [fin];
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskStartFailed', data: { taskId, commandId, attempt, reason: c.data.reason, failedAt: c.metadata.at }, metadata: meta(c.metadata) }, fin];
}

function background(c: BackgroundTask, s: TaskState): TaskEvent[] {
  if (s.status === 'none') throw new NotFound('unknown task');
  if (isTerminalStatus(s.status)) throw new IllegalState(`task already finished (${s.status})`);
  if (s.runnerId === null) throw new IllegalState('task has not started');
  if (s.background) return [];
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskBackgrounded', data: { taskId, commandId, attempt, backgroundedAt: c.metadata.at }, metadata: meta(c.metadata) }];
}

function requestStop(c: RequestStop, s: TaskState): TaskEvent[] {
  if (s.status === 'none') throw new NotFound('unknown task');
  if (c.data.attempt !== undefined && c.data.attempt !== s.task.attempt) throw new IllegalState(`attempt ${c.data.attempt} is not the task's current attempt (${s.task.attempt})`);
  if (isTerminalStatus(s.status)) throw new IllegalState(`task already finished (${s.status})`);
  if (s.status === 'stopping') return [];
  const { taskId, commandId, attempt, epoch } = s.task;
  return [
    {
      type: 'TaskStopRequested',
      data: { taskId, commandId, attempt, epoch, reason: c.data.reason, requestedBy: c.data.requestedBy, requestedAt: c.metadata.at },
      metadata: meta(c.metadata),
    },
  ];
}

function finish(c: FinishTask, s: TaskState): TaskEvent[] {
  if (s.status === 'none') throw new NotFound('unknown task');
  if (isTerminalStatus(s.status)) return [];
  if (s.runnerId === null) throw new IllegalState('task has not started');
  return [finished(s, finishedStatus(s.status === 'stopping' ? s.stop : null, c.data), c.data, c.metadata)];
}

function decide(command: TaskCommand, state: TaskState): TaskEvent[] {
  switch (command.type) {
    case 'RegisterTask':
      return register(command, state);
    case 'StartTask':
      return start(command, state);
    case 'FailStart':
      return failStart(command, state);
    case 'BackgroundTask':
      return background(command, state);
    case 'RequestStop':
      return requestStop(command, state);
    case 'FinishTask':
      return finish(command, state);
    default:
      return assertNever(command, 'task command');
  }
}

// evolve is total and lenient: it folds whatever the log holds; decide() is where rules are enforced.
function evolve(state: TaskState, event: TaskEvent): TaskState {
  if (event.type === 'TaskRegistered') {
    if (state.status !== 'none') return state;
    return { status: 'starting', task: factsOf(event.data), background: false, runnerId: null, startedAt: null, startFailure: null };
  }
  if (state.status === 'none') return state;
  switch (event.type) {
    case 'TaskStarted':
      if (state.status === 'starting') return { ...state, status: 'running', runnerId: event.data.runnerId, startedAt: event.data.startedAt };
      if (state.status === 'stopping') return { ...state, runnerId: event.data.runnerId, startedAt: event.data.startedAt };
      return state;
    case 'TaskStartFailed':
      return isTerminalStatus(state.status) ? state : { ...state, startFailure: event.data.reason };
    case 'TaskBackgrounded':
      return { ...state, background: true };
    case 'TaskStopRequested': {
      if (state.status !== 'starting' && state.status !== 'running') return state;
      const stop = { reason: event.data.reason, requestedBy: event.data.requestedBy, requestedAt: event.data.requestedAt };
      return { ...state, status: 'stopping', stop };
    }
    case 'TaskFinished': {
      const d = event.data;
      const base: Registered = { task: state.task, background: state.background, runnerId: state.runnerId, startedAt: state.startedAt, startFailure: state.startFailure };
      return { ...base, status: d.status, exitCode: d.exitCode, signal: d.signal, resultState: d.resultState, outputBytes: d.outputBytes, finishedAt: d.finishedAt };
    }
    default:
      return assertNever(event, 'task event');
  }
}

/** The task aggregate (DESIGN.md §3): starting → running → stopping → succeeded | failed | cancelled | timed_out | lost. */
export const taskDecider: Decider<TaskState, TaskCommand, TaskEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve,
  decide,
};
