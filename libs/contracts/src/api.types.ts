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
}
