import { Conflict, IllegalState } from '@handplane/kernel';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import { stopAndSignal } from './stop-task';
import { inTaskTrace } from './task-trace';

type Deps = Pick<CoordinatorDeps, 'pool' | 'tasks' | 'registry' | 'runners' | 'clock' | 'logger' | 'settings'>;

interface Observation {
  /** Monotonic time when this instance first saw the attempt running. */
  readonly mono: number;
  /** Wall-clock time the attempt had run by then (from its start time in the log). */
  readonly elapsedMs: number;
}

/**
 * The deadline (DESIGN.md §3: default 1 h from the start, per-task timeoutMs up to the maximum): a
 * running task past it is stopped with reason `deadline` (SIGTERM, SIGKILL after the grace) and ends
 * `timed_out` once its exit is proven.
 *
 * Timers are derived, not held: every sweep reads the running tasks and their start times from the
 * `tasks` read model, so they survive restarts. Elapsed time is measured with the monotonic clock
 * from the moment this instance first saw the attempt: `elapsed = (wall now - started_at) at first
 * sight + (monotonic now - monotonic then)`. A wall-clock jump after that moment (NTP step, VM
 * resume) therefore never fires a deadline early (or late); only the first sight after a start-up
 * relies on the wall clock. The runner's own backstop (the Exec's timeoutMs, on its monotonic
 * timers) ends the command too if every coordinator is away.
 */
export class DeadlineWatch {
  private readonly seen = new Map<string, Observation>();

  constructor(private readonly d: Deps) {}

  /** Stops the running tasks whose deadline passed; answers their ids. */
  async sweep(): Promise<string[]> {
    const { d } = this;
    const rows = await d.pool.query<{ task_id: string; attempt: number; started_at: Date; timeout_ms: string; traceparent: string | null }>(
      `SELECT task_id, attempt, started_at, timeout_ms, traceparent FROM tasks WHERE status = 'running' AND started_at IS NOT NULL AND timeout_ms > 0`,
    );
    const mono = d.clock.monotonicMs();
    const wall = d.clock.now().getTime();
    const current = new Set<string>();
    const overdue: { taskId: string; attempt: number; traceparent: string | null }[] = [];
    for (const r of rows.rows) {
      const key = `${r.task_id}:${r.attempt}`;
      current.add(key);
      let o = this.seen.get(key);
      if (!o) this.seen.set(key, (o = { mono, elapsedMs: Math.max(0, wall - r.started_at.getTime()) }));
      if (o.elapsedMs + (mono - o.mono) >= Number(r.timeout_ms)) overdue.push({ taskId: r.task_id, attempt: r.attempt, traceparent: r.traceparent });
    }
    for (const key of this.seen.keys()) if (!current.has(key)) this.seen.delete(key);
    const stopped: string[] = [];
    for (const t of overdue) {
      try {
        await inTaskTrace('deadline stop', t.taskId, t.traceparent, () => stopAndSignal(d, t.taskId, { reason: 'deadline', requestedBy: SYSTEM_ACTOR, attempt: t.attempt }));
        stopped.push(t.taskId);
        d.logger.info({ taskId: t.taskId, attempt: t.attempt }, 'deadline passed: stopping the task');
      } catch (e) {
        // The read model lags: the task finished, or moved to another attempt, since it was read.
        if (e instanceof IllegalState || e instanceof Conflict) continue;
        d.logger.warn({ err: e, taskId: t.taskId }, 'could not stop an overdue task; the next sweep retries');
      }
    }
    return stopped;
  }
}
