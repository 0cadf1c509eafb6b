import type { Pool } from 'pg';
import type { Clock } from '@handplane/kernel';
import type { Topology } from '@handplane/contracts';
import { conversationRunDecider as decider, type ConversationEvent, type ConversationRunState, type EpochEnded } from '@handplane/domain';
import { inTransaction, type EventStore, type Logger } from '@handplane/platform';
import type { TranscriptEntry } from '../model/transcript';
import { clearOutbox, loadCheckpoint, saveCheckpoint, type Checkpoint, type OutboxEntry } from './checkpoint';
import { releaseLease, renewLease } from './lease';

export interface EpochEndedDeps {
  readonly pool: Pool;
  readonly store: EventStore;
  readonly topology: Topology;
  readonly clock: Clock;
  readonly logger: Logger;
  /** This instance's lease owner name. */
  readonly owner: string;
  readonly leaseMs: number;
}

const apply = (s: ConversationRunState, events: readonly ConversationEvent[]) => events.reduce((acc, e) => decider.evolve(acc, e), s);

/**
 * The checkpoint after stop-all (pure): the active run finishes as `stopped` (tool calls it had not
 * run yet get a "stopped" result, so the transcript stays well formed for the next turn), and a
 * waiting conversation's wait ends. Undefined when there is nothing to stop.
 */
export function stoppedCheckpoint(cp: Checkpoint, ended: EpochEnded['data'], at: string): Checkpoint | undefined {
  const detail = `stop-all ended epoch ${ended.epoch}`;
  const run = cp.active;
  if (run) {
    const meta = { at, actor: ended.by };
    const calls = run.pending ? run.pending.calls.slice(run.pending.done) : [];
    const results: TranscriptEntry[] = calls.map((c) => ({ kind: 'tool_result', callId: c.callId, name: c.name, ok: false, result: { error: `stopped: ${detail}` } }));
    let events: ConversationEvent[];
    try {
      events = decider.decide({ type: 'FinishRun', data: { runId: run.runId, outcome: 'stopped', detail }, metadata: meta }, cp.conv);
    } catch {
      // The checkpoint's view of the run disagrees with the decider: the run still has to end.
      events = [{ type: 'run.finished', data: { runId: run.runId, outcome: 'stopped', detail }, metadata: meta }];
    }
    const outbox: OutboxEntry[] = events.map((event) => ({ msgId: `run:${run.runId}:finished`, event }));
    return { ...cp, conv: apply(cp.conv, events), transcript: [...cp.transcript, ...results], active: null, outbox: [...cp.outbox, ...outbox] };
  }
  if (cp.conv.status === 'waiting') {
    const event: ConversationEvent = { type: 'wait.invalidated', data: { reason: 'stop_all', taskIds: [...cp.conv.taskIds] }, metadata: { at, actor: ended.by } };
    return { ...cp, conv: apply(cp.conv, [event]), outbox: [...cp.outbox, { msgId: `epoch-ended:${ended.epoch}:wait-invalidated`, event }] };
  }
  return undefined;
}

/**
 * The runtime's reaction to `epoch.ended` (stop-all, DESIGN.md §6).
 * - The completions of the tasks stop-all stopped wake nobody: their `wakeups` rows are recorded as
 *   consumed up front (the person asked everything to stop; the task notices still reach the conversation).
 * - The run in progress stops at its last stored step: the reaction takes the conversation's run
 *   lease even from a live holder, so that holder's next checkpoint write (fenced by the lease)
 *   fails and its turn ends there; the stored checkpoint then finishes the run as `stopped`.
 * - A waiting conversation's wait ends (`wait.invalidated {reason: stop_all}`).
 * Repeating it (a redelivery) finds nothing left to stop and publishes nothing new.
 */
export async function onEpochEnded(d: EpochEndedDeps, conversationId: string, ended: EpochEnded['data']): Promise<void> {
  for (const t of ended.stoppedTasks) {
    await d.pool.query(
      `INSERT INTO wakeups (conversation_id, task_id, attempt, user_id, payload, consumed_by_run, consumed_at) VALUES ($1, $2, $3, $4, $5, $6, now())
       ON CONFLICT (conversation_id, task_id, attempt) DO UPDATE SET consumed_by_run = EXCLUDED.consumed_by_run, consumed_at = now() WHERE wakeups.consumed_by_run IS NULL`,
      [conversationId, t.taskId, t.attempt, ended.by, JSON.stringify({ stoppedByEpoch: ended.epoch }), `epoch-ended:${ended.epoch}`],
    );
  }
  const stopper = `${d.owner}:stop-all`;
  await d.pool.query(
    `INSERT INTO run_leases (conversation_id, run_id, owner, lease_until) VALUES ($1, '', $2, now() + $3::int * interval '1 millisecond')
     ON CONFLICT (conversation_id) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until`,
    [conversationId, stopper, d.leaseMs],
  );
  try {
    const { cp, changed } = await inTransaction(d.pool, async (c) => {
      await renewLease(c, conversationId, stopper, d.leaseMs);
      const before = await loadCheckpoint(c, conversationId);
      const next = stoppedCheckpoint(before, ended, d.clock.now().toISOString());
      return next ? { cp: await saveCheckpoint(c, conversationId, before, next), changed: true } : { cp: before, changed: false };
    });
    // Also what an earlier delivery stored but could not publish.
    if (cp.outbox.length) {
      for (const o of cp.outbox) await d.store.publish(d.topology.conv(conversationId), o.event, o.msgId);
      await clearOutbox(d.pool, conversationId, cp.seq);
    }
    if (changed) d.logger.info({ conversationId, epoch: ended.epoch }, 'stop-all: run stopped, wait ended');
  } finally {
    await releaseLease(d.pool, conversationId, stopper);
  }
}
