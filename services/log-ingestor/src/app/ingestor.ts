import { performance } from 'node:perf_hooks';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import { contextFromTraceparent, inSpan } from '@handplane/platform';
import { claimCursors, releaseAll, releaseWithError, renewLeases, type Cursor } from './cursors.repository';
import { LeaseLost } from './commit-batch';
import type { IngestorDeps } from './deps';
import { ingestCommand, RunnerMissing } from './ingest-command';
import { settleUnavailable } from './settle-result';

interface Active {
  readonly abort: AbortController;
  done: Promise<void>;
  /** Local monotonic time by which the lease surely ended unless renewed (measured from before the query). */
  leaseDeadline: number;
}

interface Failures {
  count: number;
  /** When the current run of failures began (reset by any success). */
  since: number;
}

const isNotFound = (e: unknown) => (e as { code?: number })?.code === GrpcStatus.NOT_FOUND;

/**
 * The claim loop and its workers. Every `claimIntervalMs` (and right after a new cursor) it claims
 * pending commands up to `maxActive` and reads each in its own worker; a timer renews the leases of
 * the commands being read and aborts a worker whose lease was taken. Failures release the command
 * with a back-off; a runner lost for `runnerLostAfterMs` settles it as unavailable.
 */
export class Ingestor {
  private readonly active = new Map<string, Active>();
  private readonly failures = new Map<string, Failures>();
  private readonly missingSince = new Map<string, number>();
  private timers: NodeJS.Timeout[] = [];
  private claiming: Promise<void> | null = null;
  private claimAgain = false;
  private stopped = false;

  constructor(private readonly deps: IngestorDeps) {}

  start(): void {
    const { claimIntervalMs, leaseMs } = this.deps.settings;
    this.timers.push(setInterval(() => this.wake(), claimIntervalMs));
    this.timers.push(setInterval(() => void this.renew(), Math.max(100, Math.floor(leaseMs / 3))));
    this.wake();
  }

  /** Claims now (coalesced with a claim in progress). */
  wake(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.claimAgain = true;
      return;
    }
    this.claiming = this.claim().finally(() => {
      this.claiming = null;
      if (this.claimAgain) {
        this.claimAgain = false;
        this.wake();
      }
    });
  }

  /** Commands this instance is reading now. */
  activeCommands(): string[] {
    return [...this.active.keys()];
  }

  /** Stops claiming, cancels every read and frees this instance's leases for the others. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.claiming?.catch(() => undefined);
    for (const a of this.active.values()) a.abort.abort();
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    await releaseAll(this.deps.pool, this.deps.settings.instanceId).catch((e) => this.deps.logger.warn({ err: e }, 'could not release leases'));
  }

  private async claim(): Promise<void> {
    const { pool, settings, logger } = this.deps;
    const free = settings.maxActive - this.active.size;
    if (free <= 0) return;
    try {
      const asked = performance.now();
      const claimed = await claimCursors(pool, settings.instanceId, settings.leaseMs, free);
      for (const cur of claimed) if (!this.active.has(cur.commandId) && !this.stopped) this.run(cur, asked + settings.leaseMs);
    } catch (e) {
      logger.warn({ err: e }, 'claim failed');
    }
  }

  private run(cur: Cursor, leaseDeadline: number): void {
    const abort = new AbortController();
    const entry: Active = { abort, done: Promise.resolve(), leaseDeadline };
    this.active.set(cur.commandId, entry);
    // The read joins the trace the command was started in (same process only; see TraceLinks).
    const parent = contextFromTraceparent(this.deps.traces?.get(cur.commandId), ROOT_CONTEXT);
    entry.done = inSpan('log-ingestor', 'ingest command', { parent, attributes: { 'hp.command_id': cur.commandId } }, () => ingestCommand(this.deps, cur, abort.signal))
      .then(() => {
        this.failures.delete(cur.commandId);
        this.deps.traces?.forget(cur.commandId);
        this.deps.logger.info({ commandId: cur.commandId, bytes: cur.committedOffset }, 'command output readable');
      })
      .catch((e) => (abort.signal.aborted || e instanceof LeaseLost ? this.dropped(cur, e) : this.failed(cur, e)))
      .finally(() => {
        this.active.delete(cur.commandId);
        if (!this.stopped) this.wake();
      });
  }

  private dropped(cur: Cursor, e: unknown): void {
    this.failures.delete(cur.commandId);
    if (!this.stopped) this.deps.logger.info({ commandId: cur.commandId, reason: (e as Error).message }, 'command dropped: lease lost');
  }

  private async failed(cur: Cursor, e: unknown): Promise<void> {
    const { logger, settings, pool } = this.deps;
    // Elapsed times use the process's monotonic clock, like the other operational timers.
    const now = performance.now();
    const f = this.failures.get(cur.commandId) ?? { count: 0, since: now };
    f.count += 1;
    this.failures.set(cur.commandId, f);
    const message = (e as Error)?.message ?? String(e);
    try {
      const lost = await this.lostReason(cur, e, now - f.since);
      if (lost) {
        const outcome = await settleUnavailable(this.deps, cur, lost);
        this.failures.delete(cur.commandId);
        logger.warn({ commandId: cur.commandId, durableBytes: cur.committedOffset, reason: lost, outcome }, 'runner lost: result settled');
        return;
      }
      const retryInMs = Math.min(5_000, 100 * 2 ** Math.min(f.count, 6)) + Math.floor(Math.random() * 100);
      logger.warn({ commandId: cur.commandId, failures: f.count, retryInMs, err: message }, 'reading command output failed; will retry');
      await releaseWithError(pool, cur.commandId, settings.instanceId, retryInMs, message);
    } catch (e2) {
      // Postgres or NATS is down too: the lease expires and some instance retries.
      logger.warn({ err: e2, commandId: cur.commandId }, 'could not record the failure');
    }
  }

  /** Why the runner counts as lost, or null while it may still come back. */
  private async lostReason(cur: Cursor, e: unknown, failingForMs: number): Promise<string | null> {
    const { registry, clock, settings } = this.deps;
    const limit = settings.runnerLostAfterMs;
    const now = clock.now().getTime();
    const record = await registry.get(cur.runnerId);
    if (!record) {
      // The registry keeps no tombstone time: count from when this instance first saw it missing.
      const since = this.missingSince.get(cur.runnerId) ?? performance.now();
      this.missingSince.set(cur.runnerId, since);
      return performance.now() - since > limit ? `runner ${cur.runnerId} gone from the registry for more than ${limit} ms` : null;
    }
    this.missingSince.delete(cur.runnerId);
    const silentMs = now - Date.parse(record.heartbeatAt);
    if (silentMs > limit) return `runner ${cur.runnerId} silent for ${silentMs} ms (lost after ${limit} ms)`;
    if (!(e instanceof RunnerMissing) && isNotFound(e) && failingForMs > limit) return `runner ${cur.runnerId} no longer knows command ${cur.commandId}`;
    return null;
  }

  /**
   * Renews the leases of the commands being read. A worker stops when its lease was taken, and also
   * when renewals kept failing until its lease may be about to end: another instance may claim the
   * command once the lease ends, and two readers of one command must never overlap.
   */
  private async renew(): Promise<void> {
    const ids = [...this.active.keys()];
    if (ids.length === 0 || this.stopped) return;
    const { leaseMs, instanceId } = this.deps.settings;
    const asked = performance.now();
    try {
      const held = await renewLeases(this.deps.pool, instanceId, ids, leaseMs);
      for (const id of ids) {
        const a = this.active.get(id);
        if (!held.has(id)) a?.abort.abort();
        else if (a) a.leaseDeadline = asked + leaseMs;
      }
    } catch (e) {
      this.deps.logger.warn({ err: e }, 'lease renewal failed');
    }
    const margin = leaseMs / 3;
    for (const a of this.active.values()) if (performance.now() > a.leaseDeadline - margin) a.abort.abort();
  }
}
