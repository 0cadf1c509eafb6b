import type { Pool, PoolClient } from 'pg';
import { conversationRunDecider, type ConversationEvent, type ConversationRunState, type RunTrigger } from '@handplane/domain';
import type { ToolCall, TranscriptEntry } from '../model/transcript';

/** The tool calls of one model response, run one by one against the snapshot taken before them (G8). */
export interface PendingCalls {
  readonly calls: readonly ToolCall[];
  /** How many of `calls` have their result in the transcript. */
  readonly done: number;
  readonly snapshot: ConversationRunState;
}

/** The run in progress. */
export interface ActiveRun {
  readonly runId: string;
  readonly userId: string;
  readonly trigger: RunTrigger;
  readonly taskId?: string;
  readonly messageId?: string;
  readonly questionId?: string;
  readonly approvalId?: string;
  /** Model responses so far; part of every message id of the run. */
  readonly step: number;
  readonly pending: PendingCalls | null;
  /** Turns the suspension guard (G6) has forced in this run. */
  readonly forced?: number;
}

/** An event to publish to CONV with its deterministic message id. */
export interface OutboxEntry {
  readonly msgId: string;
  readonly event: ConversationEvent;
}

/**
 * Everything a run needs to go on after a crash or on another instance: the decider state (todos,
 * wait, open questions and approvals), the model transcript (messages, tool calls and results;
 * carried across runs, so a woken run continues the same plan), the run in progress with its
 * pending tool calls, and the events written with this checkpoint. Those are published after the
 * checkpoint commits, and again on resume: their ids make a second publish a no-op.
 */
export interface Checkpoint {
  readonly v: 1;
  /** Incremented by every write; fences clearing the outbox once it is published. */
  readonly seq: number;
  readonly conv: ConversationRunState;
  readonly transcript: readonly TranscriptEntry[];
  readonly active: ActiveRun | null;
  readonly outbox: readonly OutboxEntry[];
}

/** The checkpoint of a conversation that never ran. */
export function emptyCheckpoint(): Checkpoint {
  return { v: 1, seq: 0, conv: conversationRunDecider.initialState(), transcript: [], active: null, outbox: [] };
}

/** Reads a conversation's checkpoint. */
export async function loadCheckpoint(db: Pool | PoolClient, conversationId: string): Promise<Checkpoint> {
  const r = await db.query<{ state: Checkpoint }>(`SELECT state FROM run_checkpoints WHERE conversation_id = $1`, [conversationId]);
  return r.rowCount ? r.rows[0]!.state : emptyCheckpoint();
}

/**
 * Writes the checkpoint that follows `previous` (inside the caller's transaction, which also holds
 * the fenced lease) and returns it as stored.
 */
export async function saveCheckpoint(c: PoolClient, conversationId: string, previous: Checkpoint, next: Checkpoint): Promise<Checkpoint> {
  const cp: Checkpoint = { ...next, seq: previous.seq + 1 };
  await c.query(
    `INSERT INTO run_checkpoints (conversation_id, run_id, state, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (conversation_id) DO UPDATE SET run_id = EXCLUDED.run_id, state = EXCLUDED.state, updated_at = now()`,
    [conversationId, cp.active?.runId ?? null, JSON.stringify(cp)],
  );
  return cp;
}

/**
 * Empties the outbox of checkpoint `seq` once its events are published, so a later resume (past
 * the JetStream duplicate window) cannot publish them again. A newer checkpoint is left alone.
 */
export async function clearOutbox(pool: Pool, conversationId: string, seq: number): Promise<void> {
  await pool.query(`UPDATE run_checkpoints SET state = jsonb_set(state, '{outbox}', '[]'::jsonb) WHERE conversation_id = $1 AND (state->>'seq')::bigint = $2`, [conversationId, seq]);
}
