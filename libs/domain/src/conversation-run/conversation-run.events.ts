import type { Message } from '@handplane/kernel';
import type { TaskReceipt } from '../task/task.events';

/**
 * Conversation events live on `conv.<conversationId>` in the CONV stream. Their `type`s are the
 * public SSE event names of DESIGN.md §7 (a contract), plus a few internal ones.
 */
export type TodoStatus = 'pending' | 'in_progress' | 'completed';
export interface Todo {
  id: string;
  content: string;
  status: TodoStatus;
  /** Tasks bound to this todo (explicitly, or implicitly when launched while it was in progress). */
  taskIds: string[];
}
/**
 * What started a run: a user message, a finished task (G9, G10), a person's answer to a question or
 * a person's decision on an approval (G7: the last three are human input and end any wait).
 */
export type RunTrigger = 'message' | 'task_event' | 'answer' | 'approval';
export type RunOutcome = 'completed' | 'waiting' | 'stopped' | 'failed';

export type ConversationCreated = Message<'conversation.created', { conversationId: string; tenant: string; title: string; createdBy: string }>;
export type MemberAdded = Message<'member.added', { conversationId: string; userId: string; addedBy: string }>;
export type UserMessagePosted = Message<'message.user', { messageId: string; userId: string; text: string; clientMessageId?: string }>;
export type RunStarted = Message<
  'run.started',
  { runId: string; userId: string; trigger: RunTrigger; taskId?: string; messageId?: string; questionId?: string; approvalId?: string }
>;
export type RunFinished = Message<'run.finished', { runId: string; outcome: RunOutcome; detail?: string }>;
export type AssistantMessage = Message<'assistant.message', { runId: string; text: string }>;
export type ToolCalled = Message<'tool.called', { runId: string; callId: string; name: string; args: unknown }>;
export type ToolResult = Message<'tool.result', { runId: string; callId: string; name: string; ok: boolean; result: unknown }>;
export type TodosUpdated = Message<'todos.updated', { runId?: string; todos: Todo[]; waitForTasks: string[] }>;
export type WaitDeclared = Message<'wait.declared', { runId: string; taskIds: string[] }>;
/** G7: human input ended the wait on `taskIds` (the run that follows decides what to wait for next). */
export type WaitInvalidated = Message<'wait.invalidated', { reason: string; runId?: string; taskIds?: string[] }>;
export type GuardRejected = Message<'guard.rejected', { runId?: string; rule: string; detail: string }>;

/**
 * A command of the run needs a person's approval (G7): the approval policy matched it. Automated
 * approvals are followed at once by `approval.resolved {automated: true}`; the others wait for
 * `POST /v1/conversations/:id/approvals/:approvalId`, which appends `approval.resolved`.
 */
export type ApprovalRequested = Message<'approval.requested', { approvalId: string; runId: string; command: string; reason: string }>;
/** The decision on an approval: by a person (`automated: false`, ends any wait) or by the policy. */
export type ApprovalResolved = Message<'approval.resolved', { approvalId: string; decision: 'approve' | 'reject'; by: string; automated: boolean }>;
/** The agent (or the suspension guard, G6) asked the conversation a question; a person answers it. */
export type QuestionAsked = Message<'question.asked', { questionId: string; runId: string; text: string }>;
/** A person's answer (appended by the gateway); it starts a turn at once (G7). */
export type QuestionAnswered = Message<'question.answered', { questionId: string; text: string; by: string }>;

/** Live output, published during the foreground window only (the log keeps every byte). */
export type CommandOutput = Message<'command.output', { taskId: string; commandId: string; offset: number; text: string; bytes: number }>;
export type TaskStartedNotice = Message<'task.started', { taskId: string; commandId: string; attempt: number; runnerId: string; userId: string; command: string }>;
export type TaskBackgroundedNotice = Message<'task.backgrounded', { taskId: string; commandId: string }>;
/** v2 (v1 had no `attempt` and `requestedBy`: the upcaster fills them in from the metadata). */
export type TaskStoppingNotice = Message<'task.stopping', { taskId: string; commandId: string; attempt: number | null; reason: string; requestedBy: string }>;
export type TaskFinishedNotice = Message<
  'task.finished',
  { taskId: string; commandId: string; status: string; exitCode: number | null; signal: string | null; receipt?: TaskReceipt }
>;
export type TaskResultNotice = Message<'task.result', { taskId: string; commandId: string; resultState: string; outputBytes: number }>;

/**
 * The internal task event (G9, G10): a finished task's completion, carrying the user who
 * started it. Exactly one per (taskId, attempt); it wakes the agent when the conversation is idle.
 */
export type InternalTaskEvent = Message<
  'task.internal_event',
  {
    taskId: string;
    commandId: string;
    attempt: number;
    userId: string;
    origin: 'user' | 'agent';
    runId?: string;
    status: string;
    exitCode: number | null;
    signal: string | null;
    resultState: string;
    outputBytes: number;
    /** How exactly the task ended (issue 10.4); absent on events recorded before receipts existed. */
    receipt?: TaskReceipt;
  }
>;

/**
 * Stop-all ended the conversation's execution epoch `epoch` (DESIGN.md §6): every unfinished task of
 * it was asked to stop (`stoppedTasks`, with the attempt each was stopped at) and new work runs under
 * `nextEpoch`. Appended by the task coordinator; the active run stops and any wait ends.
 */
export type EpochEnded = Message<
  'epoch.ended',
  { epoch: number; nextEpoch: number; stoppedTaskIds: string[]; stoppedTasks: { taskId: string; attempt: number }[]; by: string }
>;

/**
 * Input was written to a running task's stdin (`write-stdin`, by a person or the agent). The audit
 * keeps who, how many bytes and their SHA-256, never the bytes: an answer to `Password:` is a secret.
 */
export type TaskStdinWritten = Message<
  'task.stdin',
  { taskId: string; commandId: string; attempt: number; by: string; via: 'user' | 'agent'; bytes: number; sha256: string; closed: boolean }
>;
/**
 * A running task's output ends with a prompt-like line (`[y/N]`, `Password:`, …) and nothing more
 * came for a while: it probably waits for input. Once per prompt (`offset` = where its output ended).
 */
export type TaskAwaitingInput = Message<'task.awaiting_input', { taskId: string; commandId: string; attempt: number; offset: number; prompt: string }>;

/** What a condition wait waits for (issue 10.1). */
export type WaitUntil = 'exit' | { outputMatches: string } | { portOpen: number } | { fileExists: string };

/**
 * A condition wait on a running task resolved (issue 10.1), checked by the control plane: a line of
 * its output matched (`matched`, with the line and the offset its line starts at), or the wait's
 * timeout passed first (`timed_out`). Exactly one per condition; it wakes the agent like a
 * completion does, as the user who started the task, and the task keeps running.
 */
export type TaskConditionMet = Message<
  'task.condition_met',
  {
    conditionId: string;
    taskId: string;
    commandId: string;
    attempt: number;
    userId: string;
    runId: string;
    until: WaitUntil;
    outcome: 'matched' | 'timed_out';
    line?: string;
    offset?: number;
    detail: string;
  }
>;

export type ConversationEvent =
  | ConversationCreated
  | MemberAdded
  | UserMessagePosted
  | RunStarted
  | RunFinished
  | AssistantMessage
  | ToolCalled
  | ToolResult
  | TodosUpdated
  | WaitDeclared
  | WaitInvalidated
  | GuardRejected
  | ApprovalRequested
  | ApprovalResolved
  | QuestionAsked
  | QuestionAnswered
  | CommandOutput
  | TaskStartedNotice
  | TaskBackgroundedNotice
  | TaskStoppingNotice
  | TaskFinishedNotice
  | TaskResultNotice
  | InternalTaskEvent
  | EpochEnded
  | TaskConditionMet
  | TaskStdinWritten
  | TaskAwaitingInput;

export type ConversationEventType = ConversationEvent['type'];
