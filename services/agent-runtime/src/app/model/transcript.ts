import type { InternalTaskEvent } from '@handplane/domain';

/** A tool call of a model response. `callId` is unique within the conversation's transcript. */
export interface ToolCall {
  readonly callId: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
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
  | ({ readonly kind: 'task_event' } & InternalTaskEvent['data']);

/** The model port: the scripted model today, an OpenAI-compatible provider in a later issue. */
export interface ModelProvider {
  next(transcript: readonly TranscriptEntry[]): Promise<ModelResponse>;
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
}
export interface ExecBackgrounded {
  readonly taskId: string;
  readonly commandId: string;
  readonly status: 'running_in_background';
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
}
/** A tool's error answer (`ok: false`). */
export interface ToolError {
  readonly error: { readonly code: string; readonly message: string };
}
