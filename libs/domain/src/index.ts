export type { TaskEvent, TaskRegistered, TaskStarted, TaskStartFailed, TaskBackgrounded, TaskStopRequested, TaskFinished, TaskStatus, TerminalTaskStatus, TaskOrigin, StopReason, ResultState } from './task/task.events';
export type { SandboxCommandEvent, CommandExited, CommandResultReadable, CommandResultUnavailable, CommandResultDelivered } from './sandbox-command/sandbox-command.events';
export type {
  ConversationEvent,
  ConversationEventType,
  Todo,
  TodoStatus,
  RunTrigger,
  RunOutcome,
  ConversationCreated,
  MemberAdded,
  UserMessagePosted,
  RunStarted,
  RunFinished,
  AssistantMessage,
  ToolCalled,
  ToolResult,
  TodosUpdated,
  WaitDeclared,
  WaitInvalidated,
  GuardRejected,
  CommandOutput,
  TaskStartedNotice,
  TaskBackgroundedNotice,
  TaskStoppingNotice,
  TaskFinishedNotice,
  TaskResultNotice,
  InternalTaskEvent,
} from './conversation-run/conversation-run.events';
export { sandboxCommandDecider } from './sandbox-command/sandbox-command.decider';
export type { SandboxCommandState, ExitFacts } from './sandbox-command/sandbox-command.decider';
export type { SandboxCommandCommand, RecordExit, MarkReadable, MarkUnavailable, MarkDelivered } from './sandbox-command/sandbox-command.commands';
export type { TaskCommand, RegisterTask, StartTask, FailStart, BackgroundTask, RequestStop, FinishTask } from './task/task.commands';
export { taskDecider, finishedStatus, isTerminalStatus, TERMINAL_TASK_STATUSES } from './task/task.decider';
export type { TaskState, TaskFacts, StopRequest } from './task/task.decider';
export { conversationRunDecider, isTerminalTaskStatus } from './conversation-run/conversation-run.decider';
export type { ConversationRunState, ConversationRunEvent } from './conversation-run/conversation-run.decider';
export type { ConversationRunCommand, StartRun, FinishRun, UpdateTodos, DeclareWait, RecordTaskLaunch, WaitCheck } from './conversation-run/conversation-run.commands';
export { GuardViolation } from './conversation-run/conversation-run.errors';
export type { GuardRule } from './conversation-run/conversation-run.errors';
