import type { ConversationEvent, ConversationRunCommand, ConversationRunEvent, ConversationRunState } from '@handplane/domain';
import type { Logger } from '@handplane/platform';
import type { ApprovalPolicy } from '../approval/approval-policy';
import type { TranscriptEntry } from '../model/transcript';
import type { HostPort } from './host';

/** What the tools reach: the host (coordinator, task log, Command Log, wake-ups) and settings. */
export interface ToolDeps {
  readonly host: HostPort;
  readonly logger: Logger;
  /** The coordinator backgrounds a task after this; `exec` gives up waiting some time after it. */
  readonly foregroundWindowMs: number;
  /** Which commands need a person (G7). */
  readonly approvalPolicy: ApprovalPolicy;
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
  /** The transcript so far (earlier calls of this response included): what the run has seen and done. */
  readonly history: readonly TranscriptEntry[];
  /** Set when this `exec` re-runs a call a person approved. */
  readonly approvalId?: string;
  /**
   * Decides commands against the run's live state, all or nothing, and applies the events; the
   * runner publishes them with the call's result (so a retried call never loses them). A call that
   * fails or is refused publishes none of them.
   */
  decide(commands: readonly ConversationRunCommand[]): ConversationRunEvent[];
  /** The live state: what decisions are checked against (the snapshot is what the model saw). */
  state(): ConversationRunState;
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

/** The message of a zod failure, as a tool error the model can fix. */
export function invalidArgs(tool: string, issues: readonly { path: readonly PropertyKey[]; message: string }[]): string {
  return `invalid ${tool} arguments: ${issues.map((i) => `${i.path.map(String).join('.') || 'args'}: ${i.message}`).join('; ')}`;
}
