import type { Message } from '@handplane/kernel';
import type { TaskStatus } from '../task/task.events';
import type { RunOutcome, RunTrigger, Todo } from './conversation-run.events';

/**
 * Starts a run: at most one is active per conversation. A run started by human input (a message, an
 * answer, an approval decision) ends the conversation's wait first (G7).
 */
export type StartRun = Message<
  'StartRun',
  { runId: string; userId: string; trigger: RunTrigger; taskId?: string; messageId?: string; questionId?: string; approvalId?: string }
>;

/** A user message arrived while the run is active: it steers the run and ends its wait (G7). */
export type SteerRun = Message<'SteerRun', { runId: string; messageId: string }>;

/** The run asks the conversation a question (`ask_user`, or the suspension guard G6). */
export type AskQuestion = Message<'AskQuestion', { runId: string; questionId: string; text: string }>;

/**
 * The approval policy matched a command of the run. `automated` approvals are decided at once by
 * the policy (they keep any wait, G7); the others wait for a person.
 */
export type RequestApproval = Message<'RequestApproval', { runId: string; approvalId: string; command: string; reason: string; automated: boolean }>;

/** Ends the active run. `waiting` is only possible while a validated wait is active. */
export type FinishRun = Message<'FinishRun', { runId: string; outcome: RunOutcome; detail?: string }>;

/**
 * Replaces the todo list (`write_todos`). `taskStatuses` is what the host knows of every task
 * bound to a todo (the runtime reads it; `unknown` when the task cannot be found), so G4 can be
 * decided without I/O. `waitForTasks` is only shown here: the wait itself is declared by DeclareWait.
 */
export type UpdateTodos = Message<
  'UpdateTodos',
  { runId: string; todos: readonly Todo[]; waitForTasks: readonly string[]; taskStatuses: Readonly<Record<string, TaskStatus | 'unknown'>> }
>;

/** The answer of `validate_task_wait` for one task (G5), as the host gave it. */
export interface WaitCheck {
  readonly taskId: string;
  readonly valid: boolean;
  readonly reason?: string;
}

/** Declares a wait on tasks; `validation` is the host's answer for each of them (G5). */
export type DeclareWait = Message<'DeclareWait', { runId: string; taskIds: readonly string[]; validation: readonly WaitCheck[] }>;

/**
 * Records that the active run launched a task: it binds implicitly to the todo that was in progress
 * when the model asked for it (`todoId`, from the model's snapshot; default: the one in progress now).
 * A todo that an earlier call of the same response completed cannot take the task (G4, G8).
 */
export type RecordTaskLaunch = Message<'RecordTaskLaunch', { runId: string; taskId: string; todoId?: string }>;

export type ConversationRunCommand = StartRun | FinishRun | UpdateTodos | DeclareWait | RecordTaskLaunch | SteerRun | AskQuestion | RequestApproval;
