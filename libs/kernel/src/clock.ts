/**
 * Time enters the system through a clock so that rules stay pure and tests use fixed times.
 * `monotonicMs` is for measuring elapsed time (never jumps with the wall clock).
 */
export interface Clock {
  /** Wall-clock time, for timestamps people read. */
  now(): Date;
  /** Milliseconds from an arbitrary origin that never goes backwards. */
  monotonicMs(): number;
}

/** A clock that only moves when told to: for tests. */
export class FixedClock implements Clock {
  private wallMs: number;
  private mono = 0;
  constructor(start: Date | string = '2026-01-01T00:00:00.000Z') {
    this.wallMs = new Date(start).getTime();
  }
  now(): Date {
    return new Date(this.wallMs);
  }
  monotonicMs(): number {
    return this.mono;
  }
  /** Moves both wall and monotonic time forward. */
  advance(ms: number): void {
    this.wallMs += ms;
    this.mono += ms;
  }
}
