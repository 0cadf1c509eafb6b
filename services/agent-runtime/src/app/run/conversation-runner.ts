import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { Clock } from '@handplane/kernel';
import type { Topology } from '@handplane/contracts';
import { admitsWakeups } from '@handplane/domain';
import { inTransaction, type EventStore, type Logger } from '@handplane/platform';
import type { ModelProvider } from '../model/transcript';
import type { Tool } from '../tools/tool';
import { clearOutbox, loadCheckpoint, saveCheckpoint, type Checkpoint } from './checkpoint';
import { advance } from './engine';
import { releaseLease, renewLease, takeLease } from './lease';
import { consumeItem, conversationsNeedingWork, hasSteeringMessage, hasWork, lockNextItem, lockSteeringMessages } from './queue';
import { isStale, startRun, steer } from './run-steps';

export interface RunnerDeps {
  readonly pool: Pool;
  readonly store: EventStore;
  readonly topology: Topology;
  readonly logger: Logger;
  readonly model: ModelProvider;
  readonly tools: Readonly<Record<string, Tool>>;
  readonly clock: Clock;
  /** This instance's name in `run_leases.owner`. */
  readonly owner: string;
  readonly leaseMs: number;
  /** How often queued work and abandoned runs are looked for (lost kicks, expired leases). */
  readonly sweepMs: number;
}

/**
 * Drives conversations: one run at a time per conversation under a lease in Postgres (renewed by
 * a heartbeat; an expired lease lets another instance resume the run from its checkpoint), human
 * input before task completions, model → tools → checkpoint after every step until the model ends
 * its turn, then the next queued item before the lease is given up.
 */
export class ConversationRunner {
  private readonly driving = new Map<string, { again: boolean }>();
  private readonly inflight = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private sweeper?: NodeJS.Timeout;

  constructor(private readonly d: RunnerDeps) {}

  /** Looks for work in a conversation now (no-op while this instance already drives it). */
  kick(conversationId: string): void {
    if (this.stopping.signal.aborted) return;
    const current = this.driving.get(conversationId);
    if (current) {
      current.again = true;
      return;
    }
    const entry = { again: false };
    this.driving.set(conversationId, entry);
    const p: Promise<void> = this.drive(conversationId, entry)
      .catch((e) => {
        if (this.stopping.signal.aborted) return;
        this.d.logger.warn({ err: e, conversationId }, 'conversation run interrupted; the sweep resumes it');
      })
      .finally(() => {
        this.driving.delete(conversationId);
        this.inflight.delete(p);
        // A kick that came while the last look for work was under way must not wait for the sweep.
        if (entry.again) this.kick(conversationId);
      });
    this.inflight.add(p);
  }

  /** Starts the periodic sweep (and runs one now). */
  startSweeper(): void {
    const sweep = () => {
      conversationsNeedingWork(this.d.pool)
        .then((ids) => ids.forEach((id) => this.kick(id)))
        .catch((e) => this.d.logger.warn({ err: e }, 'sweep failed'));
    };
    sweep();
    this.sweeper = setInterval(sweep, this.d.sweepMs);
    this.sweeper.unref();
  }

  /** Interrupts the runs in progress (their checkpoints let any instance resume them) and waits. */
  async stop(): Promise<void> {
    this.stopping.abort();
    if (this.sweeper) clearInterval(this.sweeper);
    await Promise.allSettled([...this.inflight]);
  }

  private async drive(conversationId: string, entry: { again: boolean }): Promise<void> {
    for (;;) {
      entry.again = false;
      if (this.stopping.signal.aborted || !(await takeLease(this.d.pool, conversationId, this.d.owner, this.d.leaseMs))) return;
      const lost = new AbortController();
      const heartbeat = setInterval(() => {
        renewLease(this.d.pool, conversationId, this.d.owner, this.d.leaseMs).catch((e) => {
          this.d.logger.warn({ err: e, conversationId }, 'run lease not renewed; interrupting the run');
          lost.abort();
        });
      }, Math.max(50, Math.floor(this.d.leaseMs / 3)));
      try {
        await this.work(conversationId, AbortSignal.any([this.stopping.signal, lost.signal]));
      } finally {
        clearInterval(heartbeat);
        await releaseLease(this.d.pool, conversationId, this.d.owner).catch(() => undefined);
      }
      // Work queued between our last look and the release found the lease taken: look once more.
      if (!entry.again && !(await hasWork(this.d.pool, conversationId))) return;
    }
  }

  private async work(conversationId: string, signal: AbortSignal): Promise<void> {
    let cp = await loadCheckpoint(this.d.pool, conversationId);
    await this.publish(conversationId, cp); // a resumed run may not have published its last step
    for (;;) {
      signal.throwIfAborted();
      const next = cp.active ? ((await this.steer(conversationId, cp)) ?? (await this.step(conversationId, cp, signal))) : await this.startNext(conversationId, cp);
      if (!next) return;
      cp = next;
      await this.publish(conversationId, cp);
    }
  }

  /**
   * Takes the next queued item and starts its run, in the transaction that writes the first
   * checkpoint. Task completions wait while a question or approval is open (G10); input for a
   * question or approval no longer open is consumed without a run.
   */
  private startNext(conversationId: string, cp: Checkpoint): Promise<Checkpoint | undefined> {
    return inTransaction(this.d.pool, async (c) => {
      for (;;) {
        const item = await lockNextItem(c, conversationId, { wakeups: admitsWakeups(cp.conv) });
        if (!item) return undefined;
        if (isStale(cp, item)) {
          await consumeItem(c, conversationId, item, 'ignored:stale');
          continue;
        }
        const runId = randomUUID();
        await renewLease(c, conversationId, this.d.owner, this.d.leaseMs, runId);
        await consumeItem(c, conversationId, item, runId);
        const next = await saveCheckpoint(c, conversationId, cp, startRun(cp, item, runId, this.now()));
        this.d.logger.info({ conversationId, runId, trigger: next.active?.trigger, userId: next.active?.userId }, 'run started');
        return next;
      }
    });
  }

  /** Between model calls, user messages that arrived during the run steer it (G7); undefined when there are none. */
  private async steer(conversationId: string, cp: Checkpoint): Promise<Checkpoint | undefined> {
    if (cp.active!.pending || !(await hasSteeringMessage(this.d.pool, conversationId))) return undefined;
    return inTransaction(this.d.pool, async (c) => {
      const messages = await lockSteeringMessages(c, conversationId);
      if (!messages.length) return undefined;
      await renewLease(c, conversationId, this.d.owner, this.d.leaseMs);
      for (const m of messages) await consumeItem(c, conversationId, m, cp.active!.runId);
      this.d.logger.info({ conversationId, runId: cp.active!.runId, messages: messages.length }, 'run steered');
      return saveCheckpoint(c, conversationId, cp, steer(cp, messages, this.now()));
    });
  }

  private async step(conversationId: string, cp: Checkpoint, signal: AbortSignal): Promise<Checkpoint> {
    const run = cp.active!;
    const next = await advance(conversationId, cp, { model: this.d.model, tools: this.d.tools, logger: this.d.logger, now: () => this.now() }, signal);
    const stored = await inTransaction(this.d.pool, async (c) => {
      await renewLease(c, conversationId, this.d.owner, this.d.leaseMs);
      return saveCheckpoint(c, conversationId, cp, next);
    });
    if (!stored.active) this.d.logger.info({ conversationId, runId: run.runId }, 'run finished');
    return stored;
  }

  private async publish(conversationId: string, cp: Checkpoint): Promise<void> {
    if (!cp.outbox.length) return;
    const subject = this.d.topology.conv(conversationId);
    for (const o of cp.outbox) await this.d.store.publish(subject, o.event, o.msgId);
    await clearOutbox(this.d.pool, conversationId, cp.seq);
  }

  private now(): string {
    return this.d.clock.now().toISOString();
  }
}
