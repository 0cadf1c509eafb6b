import type { ConversationRunState } from './conversation-run.decider';
import type { Todo } from './conversation-run.events';

/** Todos not completed yet. */
export function unfinishedTodos(state: ConversationRunState): Todo[] {
  return state.todos.filter((t) => t.status !== 'completed');
}

/** True while the run (or the suspended conversation) waits on validated tasks or on a person. */
export function hasActiveWait(state: ConversationRunState): boolean {
  const tasks = state.status === 'running' ? state.waitForTasks : state.status === 'waiting' ? state.taskIds : [];
  return tasks.length > 0 || (state.open?.length ?? 0) > 0;
}

/**
 * G6, the suspension guard: why the active run may not end its turn now, or undefined when it may.
 * It may when every todo is completed, or when a validated wait or an open question or approval
 * backs the unfinished ones. The message is written for the model to act on.
 */
export function suspensionIssue(state: ConversationRunState): string | undefined {
  if (state.status !== 'running') return undefined;
  const open = unfinishedTodos(state);
  if (!open.length || hasActiveWait(state)) return undefined;
  const list = open.map((t) => `${JSON.stringify(t.content)} (${t.status}${t.taskIds.length ? `, tasks ${t.taskIds.join(', ')}` : ''})`).join('; ');
  return (
    `You ended your turn with unfinished todos and no active wait: ${list}. ` +
    'Continue the work; or, if a task is running in the background, call write_todos with wait_for_tasks naming it and then end your turn; ' +
    'or ask the user with ask_user; or update the todo list to what is really done.'
  );
}

/**
 * G10, queued admission: a task completion may start a run only while no question or approval
 * waits for a person (an active run is excluded by the run lease).
 */
export function admitsWakeups(state: ConversationRunState): boolean {
  return (state.open?.length ?? 0) === 0;
}
