import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import type { Clock } from '@handplane/kernel';
import type { Topology } from '@handplane/contracts';
import { conversationRunDecider as decider, type ConversationRunCommand, type ConversationRunEvent } from '@handplane/domain';
import { inTransaction, type EventStore, type Logger } from '@handplane/platform';
import type { ModelProvider } from '../model/transcript';
import { callTool } from '../tools/tools';
import type { Tool, ToolContext } from '../tools/tool';
import { clearOutbox, loadCheckpoint, saveCheckpoint, type Checkpoint } from './checkpoint';
import { releaseLease, renewLease, takeLease } from './lease';
import { consumeItem, conversationsNeedingWork, hasWork, lockNextItem } from './queue';
import { afterModel, afterToolCall, finishRun, MAX_STEPS_PER_RUN, startRun } from './run-steps';

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
 * Drives conversations: one run at a time per conversation under a lease in Postgres, messages
 * before task completions, model → tools → checkpoint until the model ends its turn, then the
 * next queued item before the lease is given up.
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
      const next = cp.active ? await this.step(conversationId, cp, signal) : await this.startNext(conversationId, cp);
      if (!next) return;
      cp = next;
      await this.publish(conversationId, cp);
    }
  }

  /** Takes the next queued item and starts its run, in the transaction that writes the first checkpoint. */
  private startNext(conversationId: string, cp: Checkpoint): Promise<Checkpoint | undefined> {
    return inTransaction(this.d.pool, async (c) => {
      const item = await lockNextItem(c, conversationId);
      if (!item) return undefined;
      const runId = randomUUID();
      await renewLease(c, conversationId, this.d.owner, this.d.leaseMs, runId);
      await consumeItem(c, conversationId, item, runId);
      const next = await saveCheckpoint(c, conversationId, cp, startRun(cp, item, runId, this.now()));
      this.d.logger.info({ conversationId, runId, trigger: next.active?.trigger, userId: next.active?.userId }, 'run started');
      return next;
    });
  }

  private async step(conversationId: string, cp: Checkpoint, signal: AbortSignal): Promise<Checkpoint> {
    const run = cp.active!;
    let next: Checkpoint;
    if (!run.pending) {
      next =
        run.step >= MAX_STEPS_PER_RUN
          ? finishRun(cp, this.now(), [], { outcome: 'failed', detail: `the model did not end its turn within ${MAX_STEPS_PER_RUN} responses` })
          : afterModel(cp, await this.d.model.next(cp.transcript), this.now());
    } else {
      const call = run.pending.calls[run.pending.done]!;
      const { ctx, decided } = this.toolContext(conversationId, cp, call.callId, signal);
      const outcome = await callTool(this.d.tools, call, ctx, this.d.logger);
      next = afterToolCall(cp, call, outcome, decided, ctx.at);
    }
    const stored = await inTransaction(this.d.pool, async (c) => {
      await renewLease(c, conversationId, this.d.owner, this.d.leaseMs);
      return saveCheckpoint(c, conversationId, cp, next);
    });
    if (!stored.active) this.d.logger.info({ conversationId, runId: run.runId }, 'run finished');
    return stored;
  }

  private toolContext(conversationId: string, cp: Checkpoint, callId: string, signal: AbortSignal): { ctx: ToolContext; decided: ConversationRunEvent[] } {
    const run = cp.active!;
    const decided: ConversationRunEvent[] = [];
    let live = cp.conv;
    const ctx: ToolContext = {
      conversationId,
      runId: run.runId,
      userId: run.userId,
      callId,
      at: this.now(),
      snapshot: run.pending!.snapshot,
      signal,
      decide(commands: readonly ConversationRunCommand[]) {
        let s = live;
        const out: ConversationRunEvent[] = [];
        for (const command of commands) {
          const events = decider.decide(command, s);
          s = events.reduce((acc, e) => decider.evolve(acc, e), s);
          out.push(...events);
        }
        live = s;
        decided.push(...out);
        return out;
      },
    };
    return { ctx, decided };
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
