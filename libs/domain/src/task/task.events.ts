import type { Message } from '@handplane/kernel';

/** Terminal task statuses (DESIGN.md §3). */
export type TerminalTaskStatus = 'succeeded' | 'failed' | 'cancelled' | 'timed_out' | 'lost';
/** Every task status a reader can see. */
export type TaskStatus = 'starting' | 'running' | 'stopping' | TerminalTaskStatus;
/** Who asked for the task: a person through the API, or the agent through `exec`. */
export type TaskOrigin = 'user' | 'agent';
/** Why a stop was requested. */
export type StopReason = 'user' | 'deadline' | 'stop_all' | 'policy';
/** Result state of the task's command output (DESIGN.md §3). */
export type ResultState = 'result_pending' | 'readable' | 'delivered' | 'unavailable';

export type TaskRegistered = Message<
  'TaskRegistered',
  {
    taskId: string;
    commandId: string;
    conversationId: string;
    tenant: string;
    /** The user who started the task (directly, or whose run started it). */
    userId: string;
    origin: TaskOrigin;
    runId?: string;
    command: string;
    cwd: string;
    env: Record<string, string>;
    epoch: number;
    attempt: number;
    foregroundWindowMs: number;
    /** Deadline measured from start; the coordinator stops the task after it. */
    timeoutMs: number;
    registeredAt: string;
  }
>;

export type TaskStarted = Message<'TaskStarted', { taskId: string; commandId: string; attempt: number; runnerId: string; startedAt: string }>;

export type TaskStartFailed = Message<'TaskStartFailed', { taskId: string; commandId: string; attempt: number; reason: string; failedAt: string }>;

export type TaskBackgrounded = Message<'TaskBackgrounded', { taskId: string; commandId: string; attempt: number; backgroundedAt: string }>;

export type TaskStopRequested = Message<
  'TaskStopRequested',
  { taskId: string; commandId: string; attempt: number; epoch: number; reason: StopReason; requestedBy: string; requestedAt: string }
>;

export type TaskFinished = Message<
  'TaskFinished',
  {
    taskId: string;
    commandId: string;
    attempt: number;
    status: TerminalTaskStatus;
    exitCode: number | null;
    signal: string | null;
    resultState: 'readable' | 'unavailable';
    outputBytes: number;
    finishedAt: string;
  }
>;

/**
 * The runner acknowledged the stop signal of the current attempt (`delivered`: SIGTERM sent, SIGKILL
 * follows after the grace period; `already_exited`: nothing left to signal). The task stays
 * `stopping` until the exit is proven by the command's result; this only records that no further
 * signal is needed.
 */
export type TaskStopSignalled = Message<
  'TaskStopSignalled',
  { taskId: string; commandId: string; attempt: number; runnerId: string; outcome: 'delivered' | 'already_exited'; signalledAt: string }
>;

/**
 * The attempt ended without a result worth keeping (its runner was lost, or its start failed for a
 * transient reason) and the retry policy allows another: attempt `attempt` starts under the same
 * task id as a new command (`commandId`). No TaskFinished is recorded for the abandoned attempt, so
 * the task completes (and wakes the agent) once.
 */
export type TaskRetried = Message<
  'TaskRetried',
  { taskId: string; previousCommandId: string; previousAttempt: number; commandId: string; attempt: number; reason: string; retriedAt: string }
>;

/** Everything that can happen to a task. */
export type TaskEvent = TaskRegistered | TaskStarted | TaskStartFailed | TaskBackgrounded | TaskStopRequested | TaskStopSignalled | TaskRetried | TaskFinished;
