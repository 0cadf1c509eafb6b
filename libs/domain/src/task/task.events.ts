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

/**
 * How a task ended (issue 10.4): exactly one per terminal task, derived when the task finishes from
 * what the log proves (the exit record, the stop request that was in force, the runner). The agent
 * and people are shown this, never a bare "completed".
 * - `exited`: the process exited by itself with `exitCode`.
 * - `killed`: a signal ended it; `requestedBy` says who asked (null: nobody in Handplane did).
 * - `lost`: its host (runner) went away and the exit was never proven.
 * - `not_started`: no runner ever ran it (start failed, or it was stopped before it started).
 * - `unknown`: no exit code, no signal and no loss on record.
 */
export interface TaskReceipt {
  readonly outcome: 'exited' | 'killed' | 'lost' | 'not_started' | 'unknown';
  readonly status: TerminalTaskStatus;
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** The stop request in force when the task ended, if any (for `killed`: at whose request). */
  readonly requestedBy: ReceiptStop | null;
  /** One sentence a person or a model can read: "exited with code 0", "killed by SIGTERM at the request of user u1", … */
  readonly summary: string;
  readonly evidence: ReceiptEvidence;
}

/** The stop request a receipt names. */
export interface ReceiptStop {
  readonly reason: StopReason;
  readonly by: string;
  readonly at: string;
  /** Why a policy stopped it (e.g. "budget: conversation runtime 60000 ms"). */
  readonly detail?: string;
}

/** What the receipt rests on. */
export interface ReceiptEvidence {
  readonly runnerId: string | null;
  /** The generation: the conversation's epoch and the task's attempt. */
  readonly epoch: number;
  readonly attempt: number;
  readonly startedAt: string | null;
  readonly finishedAt: string;
  readonly outputBytes: number;
  readonly resultState: 'readable' | 'unavailable';
  /** The runner's reason for ending the command ('stopped', 'killed', 'timeout', 'lost: …'), when it gave one. */
  readonly exitReason: string | null;
  /** Why the start failed, for `not_started`. */
  readonly startFailure?: string;
}

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
  {
    taskId: string;
    commandId: string;
    attempt: number;
    epoch: number;
    reason: StopReason;
    requestedBy: string;
    requestedAt: string;
    /** Why, in words, when a policy asked (e.g. "budget: conversation runtime 60000 ms"); optional, added to v1. */
    detail?: string;
  }
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
    /** How exactly it ended (issue 10.4); optional, added to v1: events recorded before it have none. */
    receipt?: TaskReceipt;
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
