import { GuardViolation } from '@handplane/domain';
import { findDetachments } from './detachment';
import { classifyPolling } from './polling';

const FOREGROUND =
  'Run the command in the foreground instead: if it is still running after the foreground window, the runtime turns it into a background task with a Task ID, keeps every byte of its output and wakes you when it finishes.';

/**
 * G2: refuses a command that would detach work from its task, or that cannot be parsed (what
 * cannot be parsed cannot be checked). Throws a GuardViolation whose message the model can act on.
 */
export function checkDetachment(command: string): void {
  const report = findDetachments(command);
  if ('error' in report) {
    const where = report.at ? ` (in ${report.at})` : '';
    throw new GuardViolation('G2', `The command was not run: it could not be parsed as a shell command${where}: ${report.error}. Fix its syntax; shell code that cannot be parsed cannot be checked.`);
  }
  if (!report.found.length) return;
  const issues = report.found.map((d) => `\`${d.at}\`: ${d.why}`);
  throw new GuardViolation('G2', `The command was not run because it would detach work from its task (${[...new Set(report.found.map((d) => d.form))].join(', ')}): ${issues.join('; ')}. ${FOREGROUND}`, issues);
}

/**
 * G3: while tasks of the conversation run in the background, refuses a command that only polls
 * (sleep, ps, pgrep, loops of those, …): the model is to declare the wait and end its turn.
 */
export function checkPolling(command: string, runningTaskIds: readonly string[]): void {
  if (!runningTaskIds.length) return;
  const v = classifyPolling(command);
  if (!v.pollOnly) return;
  throw new GuardViolation('G3', `The command was not run: it only polls (${v.polls.join(', ')}) while ${taskList(runningTaskIds)} ${runningTaskIds.length > 1 ? 'run' : 'runs'} in the background. ${waitAdvice(runningTaskIds)}`);
}

/** One earlier `read_output` of the same run. */
export interface EarlierRead {
  readonly taskId: string;
  readonly offset: number;
  readonly bytes: number;
  readonly finished: boolean;
}

/**
 * G3 for `read_output`: reading a running task again from an offset that already gave no new
 * bytes in this run is polling. The first empty read is answered; the repeat is refused.
 */
export function checkRepeatedRead(earlier: readonly EarlierRead[], taskId: string, offset: number, bytes: number, finished: boolean): void {
  if (finished || bytes > 0) return;
  if (!earlier.some((r) => r.taskId === taskId && !r.finished && r.bytes === 0 && r.offset >= offset)) return;
  throw new GuardViolation('G3', `read_output of task ${taskId} from offset ${offset} returned no new bytes again: the task is still running and polling it does not make it finish. ${waitAdvice([taskId])}`);
}

function taskList(ids: readonly string[]): string {
  return ids.length === 1 ? `task ${ids[0]}` : `tasks ${ids.join(', ')}`;
}

function waitAdvice(ids: readonly string[]): string {
  return `Do not poll: call write_todos with wait_for_tasks ${JSON.stringify(ids)} and end your turn; you will be woken when ${ids.length > 1 ? 'each finishes' : 'it finishes'}.`;
}
