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
}
