import type { TaskReceipt } from '@handplane/domain';

/** How a task ended (the domain's receipt), for clients of the API. */
export type { TaskReceipt };

/** A task as the public HTTP API shows it (DESIGN.md §7, a contract): shared by the gateway and its clients. */
export interface TaskView {
  taskId: string;
  commandId: string;
  conversationId: string;
  userId: string;
  command: string;
  status: string;
  background: boolean;
  attempt: number;
  epoch: number;
  exitCode: number | null;
  signal: string | null;
  resultState: string;
  outputBytes: number;
  /** ISO-8601 times; null until the event happened. */
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  deadlineAt: string | null;
  /**
   * How the task ended (issue 10.4): null until it is terminal (and for tasks finished before
   * receipts existed). `receipt.summary` is the sentence to show.
   */
  receipt: TaskReceipt | null;
  /**
   * Set while the task runs stopped at a prompt (`task.awaiting_input`) with no input after it: the
   * prompt line, where it starts in the output, the attempt, and since when. Null otherwise.
   */
  awaitingInput: { prompt: string; offset: number; attempt: number; since: string } | null;
}

/* The read models the gateway serves besides tasks (`GET …/runs`, `…/todos`, `…/queue`, `/v1/tasks/:id/commands`, `…/log-index`). */

/** One run of the agent (`runs`), (`GET /v1/conversations/:id/runs`). */
export interface RunView {
  runId: string;
  userId: string;
  trigger: string;
  /** The message, question, approval or task that started it. */
  triggerRef: string | null;
  status: string;
  detail: string | null;
  startedAt: string;
  finishedAt: string | null;
}

/** One item of the conversation's current todo list (`todos`). */
export interface TodoView {
  id: string;
  content: string;
  status: string;
  taskIds: string[];
  /** The agent waits on one of its tasks. */
  waitedOn: boolean;
  runId: string | null;
}

/** One thing queued for the agent (`conversation_queue`) and the run it started, if any. */
export interface QueueEntryView {
  seq: number;
  kind: string;
  itemId: string;
  userId: string;
  queuedAt: string;
  startedRunId: string | null;
  startedSeq: number | null;
}

/** One attempt of a task (`commands`). */
export interface CommandView {
  commandId: string;
  attempt: number;
  runnerId: string | null;
  exitCode: number | null;
  signal: string | null;
  endOffset: number | null;
  reason: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  resultState: string;
  outputBytes: number;
  truncation: { droppedFrom: number; droppedTo: number; droppedBytes: number } | null;
  deliveredTo: string | null;
}

/** Where one chunk, truncation marker or exit record of a command's output sits in LOGS (`command_log_index`). */
export interface LogIndexEntryView {
  kind: string;
  offset: number;
  bytes: number;
  logsSeq: number;
}
