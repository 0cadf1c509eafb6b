import { assertNever, Conflict, IllegalState, NotFound, type Decider, type Metadata } from '@handplane/kernel';
import type { AbandonStart, BackgroundTask, FailStart, FinishTask, RecordStopSignal, RegisterTask, RequestStop, RetryPolicy, StartTask, TaskCommand } from './task.commands';
import type { ReceiptStop, StopReason, TaskEvent, TaskFinished, TaskRegistered, TaskRetried, TerminalTaskStatus } from './task.events';
import { receiptFor } from './task.receipt';
import { finishedStatus, stoppedStatus } from './task.status';

/** What a task was registered with (everything but the environment, which only the runner needs). `commandId` and `attempt` follow retries. */
export type TaskFacts = Omit<TaskRegistered['data'], 'env'>;

/** The stop request a stopping task is carrying out. */
export interface StopRequest {
  readonly reason: StopReason;
  readonly requestedBy: string;
  readonly requestedAt: string;
  /** Why, in words, when a policy asked (budgets). */
  readonly detail?: string;
  /** When the runner acknowledged the signal (TaskStopSignalled); null while a signal is still owed. */
  readonly signalledAt: string | null;
}

interface Registered {
  readonly task: TaskFacts;
  readonly background: boolean;
  /** Runner that accepted the current attempt; null until Exec answered. */
  readonly runnerId: string | null;
  readonly startedAt: string | null;
  /** Set once the current attempt's start failed (TaskStartFailed); the event that follows settles it. */
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

type Live = Extract<TaskState, { status: 'starting' | 'running' | 'stopping' }>;

/** The terminal statuses, for readers that filter on them. */
export const TERMINAL_TASK_STATUSES: readonly TerminalTaskStatus[] = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/** True once the task can no longer change status. */
export function isTerminalStatus(status: TaskState['status']): status is TerminalTaskStatus {
  return (TERMINAL_TASK_STATUSES as readonly string[]).includes(status);
}

export { finishedStatus };

const meta = (m: Metadata): Metadata => ({ at: m.at, ...(m.actor ? { actor: m.actor } : {}), ...(m.traceparent ? { traceparent: m.traceparent } : {}) });

function factsOf(data: TaskRegistered['data']): TaskFacts {
  const { env: _env, ...facts } = data;
  void _env;
  return facts;
}

/** The registered task (NotFound before registration); Conflict when `attempt` names another attempt than the current one. */
function live(s: TaskState, attempt: number | undefined): Live | Extract<TaskState, { status: TerminalTaskStatus }> {
  if (s.status === 'none') throw new NotFound('unknown task');
  if (attempt !== undefined && attempt !== s.task.attempt) throw new Conflict(`attempt ${attempt} is not the task's current attempt (${s.task.attempt})`);
  return s;
}

/** The stop in force, as the receipt names it. */
/** What finishing reads of the state: the registered facts and the stop in force, if any. */
type Finishing = Registered & { readonly status: string; readonly stop?: StopRequest };

function stopOf(s: Finishing): ReceiptStop | null {
  if (s.status !== 'stopping' || !s.stop) return null;
  const { reason, requestedBy: by, requestedAt: at, detail } = s.stop;
  return { reason, by, at, ...(detail ? { detail } : {}) };
}

function finished(s: Finishing, status: TerminalTaskStatus, r: Omit<FinishTask['data'], 'attempt'>, m: Metadata): TaskFinished {
  const { taskId, commandId, attempt, epoch } = s.task;
  const receipt = receiptFor({
    status,
    exitCode: r.exitCode,
    signal: r.signal,
    exitReason: r.exitReason ?? null,
    ran: s.runnerId !== null,
    stop: stopOf(s),
    evidence: {
      runnerId: s.runnerId,
      epoch,
      attempt,
      startedAt: s.startedAt,
      finishedAt: m.at,
      outputBytes: r.outputBytes,
      resultState: r.resultState,
      ...(s.startFailure !== null ? { startFailure: s.startFailure } : {}),
    },
  });
  return {
    type: 'TaskFinished',
    data: { taskId, commandId, attempt, status, exitCode: r.exitCode, signal: r.signal, resultState: r.resultState, outputBytes: r.outputBytes, finishedAt: m.at, receipt },
    metadata: meta(m),
  };
}

const NOTHING_RAN = { exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 } as const;

/** The next attempt, when the policy leaves one. */
function retried(s: Registered, retry: RetryPolicy | undefined, reason: string, m: Metadata): TaskRetried | null {
  const { taskId, commandId, attempt } = s.task;
  if (!retry || attempt >= retry.maxAttempts) return null;
  if (retry.nextCommandId === commandId) throw new IllegalState('a new attempt needs a new command id');
  return {
    type: 'TaskRetried',
    data: { taskId, previousCommandId: commandId, previousAttempt: attempt, commandId: retry.nextCommandId, attempt: attempt + 1, reason, retriedAt: m.at },
    metadata: meta(m),
  };
}

function register(c: RegisterTask, s: TaskState): TaskEvent[] {
  if (s.status === 'none') return [{ type: 'TaskRegistered', data: { ...c.data, registeredAt: c.metadata.at }, metadata: meta(c.metadata) }];
  const t = s.task;
  const same = t.taskId === c.data.taskId && t.tenant === c.data.tenant && t.conversationId === c.data.conversationId && t.userId === c.data.userId && t.command === c.data.command;
  if (!same) throw new IllegalState('this request id already registered a different task');
  return [];
}

function start(c: StartTask, state: TaskState): TaskEvent[] {
  const s = live(state, c.data.attempt);
  if (isTerminalStatus(s.status)) throw new IllegalState(`task already finished (${s.status})`);
  if (s.runnerId !== null) {
    if (s.runnerId === c.data.runnerId) return [];
    throw new IllegalState(`task already started on runner ${s.runnerId}`);
  }
  if (s.startFailure !== null) throw new IllegalState('task start already failed');
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskStarted', data: { taskId, commandId, attempt, runnerId: c.data.runnerId, startedAt: c.metadata.at }, metadata: meta(c.metadata) }];
}

function failStart(c: FailStart, state: TaskState): TaskEvent[] {
  const s = live(state, c.data.attempt);
  if (isTerminalStatus(s.status)) {
    if (s.startFailure !== null) return [];
    throw new IllegalState(`task already finished (${s.status})`);
  }
  if (s.runnerId !== null) throw new IllegalState('task already started');
  // A start failure recorded without what follows it (the second append was lost) only needs the rest;
  // the same policy decides the same way.
  const reason = s.startFailure ?? c.data.reason;
  const failedState: Finishing = { ...s, startFailure: reason };
  const next =
    s.status === 'stopping'
      ? finished(failedState, stoppedStatus(s.stop.reason), NOTHING_RAN, c.metadata)
      : (retried(s, c.data.retry, `start failed: ${reason}`, c.metadata) ?? finished(failedState, 'failed', NOTHING_RAN, c.metadata));
  if (s.startFailure !== null) return [next];
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskStartFailed', data: { taskId, commandId, attempt, reason, failedAt: c.metadata.at }, metadata: meta(c.metadata) }, next];
}

function background(c: BackgroundTask, state: TaskState): TaskEvent[] {
  const s = live(state, undefined);
  if (isTerminalStatus(s.status)) throw new IllegalState(`task already finished (${s.status})`);
  if (s.runnerId === null) throw new IllegalState('task has not started');
  if (s.background) return [];
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskBackgrounded', data: { taskId, commandId, attempt, backgroundedAt: c.metadata.at }, metadata: meta(c.metadata) }];
}

function requestStop(c: RequestStop, state: TaskState): TaskEvent[] {
  const s = live(state, c.data.attempt);
  if (isTerminalStatus(s.status)) throw new IllegalState(`task already finished (${s.status})`);
  if (s.status === 'stopping') return [];
  const { taskId, commandId, attempt, epoch } = s.task;
  return [
    {
      type: 'TaskStopRequested',
      data: { taskId, commandId, attempt, epoch, reason: c.data.reason, requestedBy: c.data.requestedBy, requestedAt: c.metadata.at, ...(c.data.detail ? { detail: c.data.detail } : {}) },
      metadata: meta(c.metadata),
    },
  ];
}

function recordStopSignal(c: RecordStopSignal, state: TaskState): TaskEvent[] {
  const s = live(state, c.data.attempt);
  // The exit may have settled the task while the signal was on its way: nothing left to record.
  if (isTerminalStatus(s.status)) return [];
  if (s.status !== 'stopping') throw new IllegalState('no stop was requested');
  if (s.runnerId !== c.data.runnerId) throw new IllegalState(`the task runs on ${s.runnerId ?? 'no runner'}, not ${c.data.runnerId}`);
  if (s.stop.signalledAt !== null) return [];
  const { taskId, commandId, attempt } = s.task;
  return [{ type: 'TaskStopSignalled', data: { taskId, commandId, attempt, runnerId: c.data.runnerId, outcome: c.data.outcome, signalledAt: c.metadata.at }, metadata: meta(c.metadata) }];
}

function abandonStart(c: AbandonStart, state: TaskState): TaskEvent[] {
  const s = live(state, undefined);
  if (isTerminalStatus(s.status)) return [];
  if (s.status !== 'stopping') throw new IllegalState('no stop was requested: the task must be started or fail its start');
  if (s.runnerId !== null) throw new IllegalState(`task started on runner ${s.runnerId}: only its exit can finish it`);
  return [finished(s, stoppedStatus(s.stop.reason), NOTHING_RAN, c.metadata)];
}

function finish(c: FinishTask, state: TaskState): TaskEvent[] {
  const s = live(state, c.data.attempt);
  if (isTerminalStatus(s.status)) return [];
  if (s.runnerId === null) throw new IllegalState('task has not started');
  const stop = s.status === 'stopping' ? s.stop : null;
  const status = finishedStatus(stop, c.data);
  // Only a lost attempt nobody asked to stop is worth another try.
  const retry = status === 'lost' && stop === null ? retried(s, c.data.retry, 'runner lost', c.metadata) : null;
  return [retry ?? finished(s, status, c.data, c.metadata)];
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
    case 'RecordStopSignal':
      return recordStopSignal(command, state);
    case 'AbandonStart':
      return abandonStart(command, state);
    case 'FinishTask':
      return finish(command, state);
    default:
      return assertNever(command, 'task command');
  }
}

const current = (s: Registered, attempt: number) => s.task.attempt === attempt;

// evolve is total and lenient: it folds whatever the log holds (events of an earlier attempt change
// nothing); decide() is where rules are enforced.
function evolve(state: TaskState, event: TaskEvent): TaskState {
  if (event.type === 'TaskRegistered') {
    if (state.status !== 'none') return state;
    return { status: 'starting', task: factsOf(event.data), background: false, runnerId: null, startedAt: null, startFailure: null };
  }
  if (state.status === 'none' || !current(state, event.type === 'TaskRetried' ? event.data.previousAttempt : event.data.attempt)) return state;
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
      const { reason, requestedBy, requestedAt, detail } = event.data;
      const stop: StopRequest = { reason, requestedBy, requestedAt, ...(detail ? { detail } : {}), signalledAt: null };
      return { ...state, status: 'stopping', stop };
    }
    case 'TaskStopSignalled':
      return state.status === 'stopping' ? { ...state, stop: { ...state.stop, signalledAt: event.data.signalledAt } } : state;
    case 'TaskRetried': {
      if (isTerminalStatus(state.status)) return state;
      const task = { ...state.task, commandId: event.data.commandId, attempt: event.data.attempt };
      return { status: 'starting', task, background: state.background, runnerId: null, startedAt: null, startFailure: null };
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

/**
 * The task aggregate (DESIGN.md §3): starting → running → stopping → succeeded | failed | cancelled |
 * timed_out | lost, with retries (a lost attempt, or a transient start failure, may start over as
 * attempt n+1 under the same task id) and generation fences (commands naming an attempt).
 */
export const taskDecider: Decider<TaskState, TaskCommand, TaskEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve,
  decide,
};
