/**
 * RUNNER_SPOOL_MAX_BYTES: how many bytes of output all spools of this runner may hold together
 * (0 = no limit besides the disk). Bytes count from the moment they are copied into a spool until
 * an Ack releases their blocks or the spool is freed. A command whose output would pass the limit is
 * killed with reason `spool_full`, its output so far kept: the same path as a real full disk.
 */
export class SpoolBudget {
  private usedBytes = 0;

  constructor(readonly maxBytes: number) {}

  get used(): number {
    return this.usedBytes;
  }

  /** Reserves up to `n` bytes; answers how many were granted (less than `n` only when the limit is reached). */
  take(n: number): number {
    const granted = this.maxBytes === 0 ? n : Math.max(0, Math.min(n, this.maxBytes - this.usedBytes));
    this.usedBytes += granted;
    return granted;
  }

  /** Returns bytes whose disk space was released. */
  give(n: number): void {
    this.usedBytes = Math.max(0, this.usedBytes - n);
  }
}
