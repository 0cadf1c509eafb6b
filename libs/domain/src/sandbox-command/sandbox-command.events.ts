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

/**
 * Bytes the ingestor deliberately did not store because the output passed its cap (OUTPUT_CAP_BYTES):
 * `[droppedFrom, droppedTo)` of the runner's offsets, `droppedBytes` of them. The output before and
 * after keeps its real offsets, so the gap is explicit, never a silent cut.
 */
export interface OutputTruncation {
  droppedFrom: number;
  droppedTo: number;
  droppedBytes: number;
}

/**
 * Every byte up to the exit record is durable in the Command Log, except the range `truncation`
 * names when the output passed the cap (absent: nothing was dropped).
 */
export type CommandResultReadable = Message<'CommandResultReadable', { commandId: string; taskId: string; attempt: number; outputBytes: number; truncation?: OutputTruncation }>;

/**
 * The runner was lost with bytes missing; the durable prefix `[0, durableBytes)` stays readable (minus
 * `truncation`, when the cap had already dropped a range).
 */
export type CommandResultUnavailable = Message<
  'CommandResultUnavailable',
  { commandId: string; taskId: string; attempt: number; durableBytes: number; reason: string; truncation?: OutputTruncation }
>;

/** The result was handed to the agent or a person. */
export type CommandResultDelivered = Message<'CommandResultDelivered', { commandId: string; taskId: string; attempt: number; deliveredTo: 'agent' | 'user' }>;

export type SandboxCommandEvent = CommandExited | CommandResultReadable | CommandResultUnavailable | CommandResultDelivered;
