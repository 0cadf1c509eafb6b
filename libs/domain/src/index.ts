export type { TaskEvent, TaskRegistered, TaskStarted, TaskStartFailed, TaskBackgrounded, TaskStopRequested, TaskStopSignalled, TaskRetried, TaskFinished, TaskStatus, TerminalTaskStatus, TaskOrigin, StopReason, ResultState, TaskReceipt, ReceiptStop, ReceiptEvidence } from './task/task.events';
export { receiptFor } from './task/task.receipt';
export type { ReceiptInput } from './task/task.receipt';
export type { SandboxCommandEvent, CommandExited, CommandResultReadable, CommandResultUnavailable, CommandResultDelivered, OutputTruncation } from './sandbox-command/sandbox-command.events';
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
  EpochEnded,
  TaskConditionMet,
  WaitUntil,
  TaskStdinWritten,
  TaskAwaitingInput,
  ApprovalRequested,
  ApprovalResolved,
  QuestionAsked,
  QuestionAnswered,
} from './conversation-run/conversation-run.events';
export { sandboxCommandDecider } from './sandbox-command/sandbox-command.decider';
export type { SandboxCommandState, ExitFacts } from './sandbox-command/sandbox-command.decider';
export type { SandboxCommandCommand, RecordExit, MarkReadable, MarkUnavailable, MarkDelivered } from './sandbox-command/sandbox-command.commands';
export type { TaskCommand, RegisterTask, StartTask, FailStart, BackgroundTask, RequestStop, RecordStopSignal, AbandonStart, FinishTask, RetryPolicy } from './task/task.commands';
export { taskDecider, finishedStatus, isTerminalStatus, TERMINAL_TASK_STATUSES } from './task/task.decider';
export { stoppedStatus } from './task/task.status';
export type { TaskState, TaskFacts, StopRequest } from './task/task.decider';
export { conversationRunDecider, isTerminalTaskStatus } from './conversation-run/conversation-run.decider';
export type { ConversationRunState, ConversationRunEvent } from './conversation-run/conversation-run.decider';
export type { ConversationRunCommand, StartRun, FinishRun, UpdateTodos, DeclareWait, RecordTaskLaunch, WaitCheck } from './conversation-run/conversation-run.commands';
export { GuardViolation } from './conversation-run/conversation-run.errors';
export type { GuardRule } from './conversation-run/conversation-run.errors';
export { checkTaskLaunch } from './conversation-run/conversation-run.decider';
export type { OpenRequest } from './conversation-run/conversation-run.decider';
export type { SteerRun, AskQuestion, RequestApproval } from './conversation-run/conversation-run.commands';
export { suspensionIssue, admitsWakeups, hasActiveWait, unfinishedTodos } from './conversation-run/conversation-run.rules';
