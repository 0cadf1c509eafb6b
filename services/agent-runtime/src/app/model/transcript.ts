import type { InternalTaskEvent, TaskConditionMet, TaskReceipt } from '@handplane/domain';

/** A tool call of a model response. `callId` is unique within the conversation's transcript. */
export interface ToolCall {
  readonly callId: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
  /**
   * Set by the runtime only (never taken from a model): this `exec` re-runs a call a person
   * approved, so the approval policy is not asked again.
   */
  readonly approvalId?: string;
}

/** What the model answers: tool calls to run, and/or text. No tool calls ends the turn. */
export interface ModelResponse {
  readonly toolCalls: readonly ToolCall[];
  readonly text?: string;
}

/**
 * The model's view of a conversation: everything it said and was told, in order. It is kept in
 * the run checkpoint, so a model that is a function of the transcript resumes anywhere.
 */
export type TranscriptEntry =
  | { readonly kind: 'user'; readonly messageId: string; readonly userId: string; readonly text: string }
  | { readonly kind: 'assistant'; readonly runId: string; readonly toolCalls: readonly ToolCall[]; readonly text?: string }
  | { readonly kind: 'tool_result'; readonly callId: string; readonly name: string; readonly ok: boolean; readonly result: unknown }
  | ({ readonly kind: 'task_event' } & InternalTaskEvent['data'])
  /** A condition wait on a running task resolved (issue 10.1): its output matched, or the wait timed out. The task still runs. */
  | ({ readonly kind: 'task_condition' } & TaskConditionMet['data'])
  /** The runtime speaks to the model: a forced turn of the suspension guard (G6). */
  | { readonly kind: 'guard'; readonly rule: string; readonly detail: string }
  /** A person answered a question of the agent. */
  | { readonly kind: 'answer'; readonly questionId: string; readonly text: string; readonly by: string }
  /**
   * A person decided on an approval. When approved, the runtime runs the command itself as call
   * `callId`, whose result follows in the transcript.
   */
  | { readonly kind: 'approval'; readonly approvalId: string; readonly decision: 'approve' | 'reject'; readonly by: string; readonly command: string; readonly callId?: string };

/** The model port: the scripted model or an OpenAI-compatible provider. */
export interface ModelProvider {
  /** The next response; `signal` aborts it when the run is interrupted. */
  next(transcript: readonly TranscriptEntry[], signal?: AbortSignal): Promise<ModelResponse>;
}

/** Tool results the model reads (what the tools in `../tools` return on success). */
export interface ExecFinished {
  readonly taskId: string;
  readonly commandId: string;
  readonly status: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly output: string;
  readonly outputBytes: number;
  readonly truncated: boolean;
  /** How the task ended (issue 10.4). */
  readonly receipt?: TaskReceipt;
}
export interface ExecBackgrounded {
  readonly taskId: string;
  readonly commandId: string;
  readonly status: 'running_in_background';
  /** The task's attempt (what `write_stdin` and `stop_task` are fenced by). */
  readonly attempt?: number;
}
export interface ReadOutputResult {
  readonly taskId: string;
  readonly commandId: string;
  readonly offset: number;
  readonly nextOffset: number;
  readonly bytes: number;
  readonly text: string;
  readonly status: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly resultState: string;
  /** True when the task has finished and every byte of its output up to `nextOffset` was read. */
  readonly eof: boolean;
  /** How the task ended (issue 10.4): set once it is terminal; `receipt.summary` is the sentence to relay. */
  readonly receipt?: TaskReceipt;
  /** Present when the output cap dropped a range: the bytes in `[droppedFrom, droppedTo)` were never stored. */
  readonly dropped?: { readonly droppedFrom: number; readonly droppedTo: number; readonly droppedBytes: number; readonly note: string };
}
/** `exec` of a command the approval policy gives to a person: the turn should end; the decision starts the next one. */
export interface ExecAwaitingApproval {
  readonly status: 'approval_pending';
  readonly approvalId: string;
  readonly command: string;
  readonly message: string;
}
/** `ask_user`: the question is on the conversation; the answer starts the next turn. */
export interface QuestionPosted {
  readonly questionId: string;
  readonly status: 'asked';
  readonly message: string;
}
/** A tool's error answer (`ok: false`). */
export interface ToolError {
  readonly error: { readonly code: string; readonly message: string };
}
