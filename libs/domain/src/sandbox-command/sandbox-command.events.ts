import type { Message } from '@handplane/kernel';

/**
 * The SandboxCommand aggregate: one attempt of a task's command on a runner, and the
 * result state machine of its output (`result_pending → readable → delivered | unavailable`).
 * Subject `cmd.<commandId>` in the TASKS stream.
 */
export type CommandExited = Message<
  'CommandExited',
  {
    commandId: string;
    taskId: string;
    attempt: number;
    runnerId: string;
    exitCode: number | null;
    signal: string | null;
    /** Total output bytes: the exit record's end offset. */
    endOffset: number;
    startedAt: string;
    finishedAt: string;
    /** Why the runner ended it, when it did (stopped, timeout, spawn failure). */
    reason: string;
  }
>;

/** Every byte up to the exit record is durable in the Command Log. */
export type CommandResultReadable = Message<'CommandResultReadable', { commandId: string; taskId: string; attempt: number; outputBytes: number }>;

/** The runner was lost with bytes missing; the durable prefix stays readable. */
export type CommandResultUnavailable = Message<
  'CommandResultUnavailable',
  { commandId: string; taskId: string; attempt: number; durableBytes: number; reason: string }
>;

/** The result was handed to the agent or a person. */
export type CommandResultDelivered = Message<'CommandResultDelivered', { commandId: string; taskId: string; attempt: number; deliveredTo: 'agent' | 'user' }>;

export type SandboxCommandEvent = CommandExited | CommandResultReadable | CommandResultUnavailable | CommandResultDelivered;
