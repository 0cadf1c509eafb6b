import type { Message } from '@handplane/kernel';

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
export type RunTrigger = 'message' | 'task_event';
export type RunOutcome = 'completed' | 'waiting' | 'stopped' | 'failed';

export type ConversationCreated = Message<'conversation.created', { conversationId: string; tenant: string; title: string; createdBy: string }>;
export type MemberAdded = Message<'member.added', { conversationId: string; userId: string; addedBy: string }>;
export type UserMessagePosted = Message<'message.user', { messageId: string; userId: string; text: string; clientMessageId?: string }>;
export type RunStarted = Message<'run.started', { runId: string; userId: string; trigger: RunTrigger; taskId?: string; messageId?: string }>;
export type RunFinished = Message<'run.finished', { runId: string; outcome: RunOutcome; detail?: string }>;
export type AssistantMessage = Message<'assistant.message', { runId: string; text: string }>;
export type ToolCalled = Message<'tool.called', { runId: string; callId: string; name: string; args: unknown }>;
export type ToolResult = Message<'tool.result', { runId: string; callId: string; name: string; ok: boolean; result: unknown }>;
export type TodosUpdated = Message<'todos.updated', { runId?: string; todos: Todo[]; waitForTasks: string[] }>;
export type WaitDeclared = Message<'wait.declared', { runId: string; taskIds: string[] }>;
export type WaitInvalidated = Message<'wait.invalidated', { reason: string }>;
export type GuardRejected = Message<'guard.rejected', { runId?: string; rule: string; detail: string }>;

/** Live output, published during the foreground window only (the log keeps every byte). */
export type CommandOutput = Message<'command.output', { taskId: string; commandId: string; offset: number; text: string; bytes: number }>;
export type TaskStartedNotice = Message<'task.started', { taskId: string; commandId: string; attempt: number; runnerId: string; userId: string; command: string }>;
export type TaskBackgroundedNotice = Message<'task.backgrounded', { taskId: string; commandId: string }>;
export type TaskStoppingNotice = Message<'task.stopping', { taskId: string; commandId: string; reason: string }>;
export type TaskFinishedNotice = Message<
  'task.finished',
  { taskId: string; commandId: string; status: string; exitCode: number | null; signal: string | null }
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
  | CommandOutput
  | TaskStartedNotice
  | TaskBackgroundedNotice
  | TaskStoppingNotice
  | TaskFinishedNotice
  | TaskResultNotice
  | InternalTaskEvent;

export type ConversationEventType = ConversationEvent['type'];
