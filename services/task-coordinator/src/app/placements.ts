import type { RunnerRecord } from '@handplane/platform';

/**
 * This coordinator's own view of where it just placed commands, between runner heartbeats:
 * - Execs sent to a runner after its last heartbeat, which that heartbeat's `running` cannot count
 *   yet (without them every command of a burst went to the same runner, the one with the lowest id
 *   among equally idle ones, until the next heartbeat; a runner that joined never got any);
 * - runners whose Exec just failed as unreachable (a host cut off keeps heart-beating into the
 *   registry over its own NATS connection, or its heartbeats are still fresh): they are chosen only
 *   when no other runner is open, for `avoidMs`, instead of costing every dispatch a call deadline.
 * Wall-clock times (heartbeats carry the runner's wall clock).
 */
export class Placements {
  private readonly placed = new Map<string, number[]>();
  private readonly avoidUntil = new Map<string, number>();

  constructor(private readonly avoidMs = 10_000) {}

  /** Commands placed on `r` after its heartbeat (forgets the older ones). */
  pending(r: RunnerRecord): number {
    const beat = Date.parse(r.heartbeatAt);
    const kept = (this.placed.get(r.runnerId) ?? []).filter((at) => at >= beat);
    if (kept.length) this.placed.set(r.runnerId, kept);
    else this.placed.delete(r.runnerId);
    return kept.length;
  }

  /** A command is being sent to `runnerId` now. */
  place(runnerId: string, nowMs: number): void {
    const list = this.placed.get(runnerId) ?? [];
    list.push(nowMs);
    this.placed.set(runnerId, list);
  }

  /** An Exec to `runnerId` failed without an answer (unreachable, deadline). */
  unreachable(runnerId: string, nowMs: number): void {
    this.avoidUntil.set(runnerId, nowMs + this.avoidMs);
  }

  /** An Exec to `runnerId` was answered. */
  reached(runnerId: string): void {
    this.avoidUntil.delete(runnerId);
  }

  /** False while `runnerId` is avoided after a failed Exec. */
  reachable(runnerId: string, nowMs: number): boolean {
    const until = this.avoidUntil.get(runnerId);
    if (until === undefined) return true;
    if (nowMs < until) return false;
    this.avoidUntil.delete(runnerId);
    return true;
  }
}
