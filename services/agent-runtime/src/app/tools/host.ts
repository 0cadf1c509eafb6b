import type { StartTaskReply, StartTaskRequest, StopTaskReply, StopTaskRequest, ValidateTaskWaitReply, WaitCondition, WriteStdinReply, WriteStdinRequest } from '@handplane/contracts';
import type { TaskStatus } from '@handplane/domain';
import type { TaskView } from './task-view';

/**
 * What the tools need from the rest of the system: the task coordinator (RPCs), the task event
 * log, the Command Log and the runtime's wake-up queue. The NATS/Postgres adapter is
 * `natsHost`; the adversarial suite plays it in memory, so the very same tools and guards run there.
 */
export interface HostPort {
  /** Tenant and execution epoch of a conversation; undefined when not known yet. */
  conversation(conversationId: string): Promise<{ tenant: string; epoch: number } | undefined>;
  startTask(req: StartTaskRequest): Promise<StartTaskReply>;
  /** `validate_task_wait` (G5). */
  /** G5; with `conditions` (issue 10.1) the coordinator also checks and registers them for `runId`. */
  validateWait(conversationId: string, taskIds: readonly string[], conditions?: { runId: string; conditions: readonly WaitCondition[] }): Promise<ValidateTaskWaitReply>;
  stopTask(req: StopTaskRequest): Promise<StopTaskReply>;
  /** `write-stdin`: input for a running task (the coordinator fences and audits it). */
  writeStdin(req: WriteStdinRequest): Promise<WriteStdinReply>;
  /** A task's status from its last event; `unknown` when there is no such task. */
  taskStatus(taskId: string): Promise<TaskStatus | 'unknown'>;
  readTask(taskId: string): Promise<TaskView | undefined>;
  /** Follows a task until `done` holds (undefined on timeout or abort). */
  watchTask(taskId: string, done: (v: TaskView) => boolean, opts: { timeoutMs: number; signal: AbortSignal }): Promise<TaskView | undefined>;
  /** Up to `cap` durable bytes of a command's output from `offset`; `dropped`: the range the output cap dropped. */
  readLog(commandId: string, offset: number, cap: number): Promise<{ bytes: Buffer; nextOffset: number; dropped?: { from: number; to: number } }>;
  /** The agent was handed a finished command's whole readable result (`CommandResultDelivered`); best effort. */
  markDelivered(commandId: string): Promise<void>;
  /** The run has read a finished task's result: its completion starts no run of its own. */
  markResultRead(r: { conversationId: string; taskId: string; attempt: number; userId: string; runId: string }): Promise<void>;
  /** Unfinished tasks of the conversation the read model knows of (commands people started included). */
  unfinishedTasks(conversationId: string): Promise<string[]>;
}
