import { assertNever } from '@handplane/kernel';
import type { FinishTask } from './task.commands';
import type { StopReason, TerminalTaskStatus } from './task.events';

/** What a stop turns the task into once its exit is proven: a deadline times it out, anything else cancels it. */
export function stoppedStatus(reason: StopReason): TerminalTaskStatus {
  switch (reason) {
    case 'deadline':
      return 'timed_out';
    case 'user':
    case 'stop_all':
    case 'policy':
      return 'cancelled';
    default:
      return assertNever(reason, 'stop reason');
  }
}

/** The runner's exit reasons that say it ended the command because it was told to. */
const SIGNALLED_REASONS: ReadonlySet<string> = new Set(['stopped', 'killed']);

/**
 * How a finished command maps to the task's terminal status.
 * - The runner's own wall-time backstop (`exitReason: 'timeout'`) is a deadline: timed_out.
 * - A stop we asked for that reached the process (a signal, or the runner says it stopped it) is
 *   cancelled, or timed_out for a deadline. A signal nobody asked for is a failure.
 * - Otherwise the exit code decides. No exit information at all is `lost` when the bytes are missing
 *   or the runner says it lost the command (it restarted), and a failure otherwise (never a success).
 */
export function finishedStatus(stop: { readonly reason: StopReason } | null, r: Pick<FinishTask['data'], 'exitCode' | 'signal' | 'resultState' | 'exitReason'>): TerminalTaskStatus {
  const reason = r.exitReason ?? '';
  if (reason === 'timeout') return 'timed_out';
  if (stop && (r.signal !== null || SIGNALLED_REASONS.has(reason))) return stoppedStatus(stop.reason);
  if (r.signal !== null) return 'failed';
  if (r.exitCode === 0) return 'succeeded';
  if (r.exitCode !== null) return 'failed';
  return r.resultState === 'unavailable' || reason.startsWith('lost') ? 'lost' : 'failed';
}
