import type { Pool } from 'pg';
import type { Topology } from '@handplane/contracts';
import type { ConversationEvent, ConversationRunCommand, ConversationRunEvent, ConversationRunState } from '@handplane/domain';
import type { EventStore, Logger, Nats } from '@handplane/platform';

/** What the tools reach: NATS (RPC, the event log), Postgres (Command Log, wake-ups) and settings. */
export interface ToolDeps {
  readonly nats: Nats;
  readonly topology: Topology;
  readonly store: EventStore;
  readonly pool: Pool;
  readonly logger: Logger;
  /** The coordinator backgrounds a task after this; `exec` gives up waiting some time after it. */
  readonly foregroundWindowMs: number;
}

/** One tool call's view of the run. */
export interface ToolContext {
  readonly conversationId: string;
  readonly runId: string;
  /** The user the run acts for (the originating user of a woken run, G9). */
  readonly userId: string;
  readonly callId: string;
  /** ISO time of this step (event metadata). */
  readonly at: string;
  /**
   * G8: every call of one model response reads this same snapshot, taken before the first of them
   * ran; nothing a call does changes what the next call of the same response reads.
   */
  readonly snapshot: ConversationRunState;
  /**
   * Decides commands against the run's live state, all or nothing, and applies the events; the
   * runner publishes them with the call's result (so a retried call never loses them).
   */
  decide(commands: readonly ConversationRunCommand[]): ConversationRunEvent[];
  /** Aborted when the runtime stops or loses the conversation's lease. */
  readonly signal: AbortSignal;
}

/** A tool's answer: what the model reads, and events to publish besides those it decided. */
export interface ToolOutcome {
  readonly ok: boolean;
  readonly result: unknown;
  readonly events: readonly ConversationEvent[];
}

export type Tool = (args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolOutcome>;
