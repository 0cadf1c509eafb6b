import type { Generation } from './types';

/** What the runner knows about the command a Signal names. */
export interface FenceTarget {
  readonly taskId: string;
  readonly generation: Generation;
  /** The exit record is written, or being written: there is nothing left to signal. */
  readonly ended: boolean;
}

/** What a Signal claims to target: the task ('' = not given), and the generation (epoch, attempt) it was issued for. */
export interface FenceRequest {
  readonly taskId: string;
  readonly generation: Generation | undefined;
}

export type FenceDecision =
  | { readonly type: 'deliver' }
  | { readonly type: 'already_exited' }
  | { readonly type: 'stale'; readonly reason: string }
  | { readonly type: 'invalid'; readonly reason: string };

const show = (g: Generation) => `(epoch ${g.epoch}, attempt ${g.attempt})`;

/**
 * The fence (DESIGN.md §6), pure: a signal may reach a command only if it names the very task and
 * generation that command runs. Anything else is stale: a delayed stop of attempt n that arrives
 * after attempt n+1 started, a stop-all of an older epoch, a duplicate routed to the newer command.
 * Staleness is decided before "already exited", so a misaddressed request is always reported as such.
 * The runner applies a second check when it delivers: the sandbox's init must still be the process
 * it started (pid + start time), so a reused pid is never signalled. WriteStdin is fenced the same
 * way (`nothing` names what was not done).
 */
export function decideSignal(target: FenceTarget, req: FenceRequest, nothing = 'nothing was signalled'): FenceDecision {
  if (!req.generation) return { type: 'invalid', reason: 'generation is required' };
  if (req.taskId !== '' && req.taskId !== target.taskId) {
    return { type: 'stale', reason: `stale task ${JSON.stringify(req.taskId)}: the command belongs to task ${JSON.stringify(target.taskId)}; ${nothing}` };
  }
  const g = target.generation;
  if (g.epoch !== req.generation.epoch || g.attempt !== req.generation.attempt) {
    return { type: 'stale', reason: `stale generation ${show(req.generation)}: the command runs ${show(g)}; ${nothing}` };
  }
  return target.ended ? { type: 'already_exited' } : { type: 'deliver' };
}
