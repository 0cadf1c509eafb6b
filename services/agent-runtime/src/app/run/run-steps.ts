import { conversationRunDecider as decider, type ConversationEvent, type ConversationRunEvent, type ConversationRunState, type RunOutcome } from '@handplane/domain';
import type { ModelResponse, ToolCall, TranscriptEntry } from '../model/transcript';
import type { ToolOutcome } from '../tools/tool';
import type { ActiveRun, Checkpoint, OutboxEntry } from './checkpoint';
import type { WorkItem } from './queue';

/**
 * The pure transitions of a run, from checkpoint to checkpoint. Each returns the next checkpoint
 * with the events to publish once it is stored; message ids are `run:<runId>:…`, so a step that
 * is redone after a crash publishes nothing twice.
 */

/** A model may answer this many times in one run; then the run fails instead of looping. */
export const MAX_STEPS_PER_RUN = 64;

function apply(state: ConversationRunState, events: readonly ConversationEvent[]): ConversationRunState {
  return events.reduce((s, e) => decider.evolve(s, e), state);
}

/** Starts a run for the next queued item: `run.started` and the item in the transcript. */
export function startRun(cp: Checkpoint, item: WorkItem, runId: string, at: string): Checkpoint {
  const data =
    item.kind === 'message'
      ? { runId, userId: item.userId, trigger: 'message' as const, messageId: item.message.messageId }
      : { runId, userId: item.userId, trigger: 'task_event' as const, taskId: item.taskId };
  const events = decider.decide({ type: 'StartRun', data, metadata: { at, actor: item.userId } }, cp.conv);
  const entry: TranscriptEntry =
    item.kind === 'message'
      ? { kind: 'user', messageId: item.message.messageId, userId: item.userId, text: item.message.text }
      : { kind: 'task_event', ...item.event };
  const active: ActiveRun = { ...data, step: 0, pending: null };
  return { ...cp, conv: apply(cp.conv, events), transcript: [...cp.transcript, entry], active, outbox: events.map((event) => ({ msgId: `run:${runId}:started`, event })) };
}

/** Records a model response: its text and tool calls; no tool calls ends the run. */
export function afterModel(cp: Checkpoint, response: ModelResponse, at: string): Checkpoint {
  const run = cp.active!;
  const meta = { at, actor: run.userId };
  const base = `run:${run.runId}:${run.step}`;
  const outbox: OutboxEntry[] = [];
  if (response.text) outbox.push({ msgId: `${base}:text`, event: { type: 'assistant.message', data: { runId: run.runId, text: response.text }, metadata: meta } });
  for (const c of response.toolCalls) {
    outbox.push({ msgId: `${base}:called:${c.callId}`, event: { type: 'tool.called', data: { runId: run.runId, callId: c.callId, name: c.name, args: publicArgs(c) }, metadata: meta } });
  }
  const entry: TranscriptEntry = { kind: 'assistant', runId: run.runId, toolCalls: response.toolCalls, ...(response.text ? { text: response.text } : {}) };
  const next: Checkpoint = { ...cp, transcript: [...cp.transcript, entry], outbox };
  if (response.toolCalls.length === 0) return finishRun(next, at, outbox);
  return { ...next, active: { ...run, pending: { calls: response.toolCalls, done: 0, snapshot: cp.conv } } };
}

/** Arguments as conversation members see them: command environment values may be secrets. */
export function publicArgs(call: ToolCall): Record<string, unknown> {
  const env = call.args.env;
  if (call.name !== 'exec' || !env || typeof env !== 'object') return call.args;
  return { ...call.args, env: Object.fromEntries(Object.keys(env).map((k) => [k, '[redacted]'])) };
}

/** Records one tool call's result, the events it decided and the state they produced. */
export function afterToolCall(cp: Checkpoint, call: ToolCall, outcome: ToolOutcome, decided: readonly ConversationRunEvent[], at: string): Checkpoint {
  const run = cp.active!;
  const pending = run.pending!;
  const meta = { at, actor: run.userId };
  const base = `run:${run.runId}:${run.step}:${call.callId}`;
  const events = [...decided, ...outcome.events];
  const outbox: OutboxEntry[] = events.map((event, i) => ({ msgId: `${base}:${i}`, event }));
  outbox.push({ msgId: `${base}:result`, event: { type: 'tool.result', data: { runId: run.runId, callId: call.callId, name: call.name, ok: outcome.ok, result: outcome.result }, metadata: meta } });
  const done = pending.done + 1;
  const active: ActiveRun = done < pending.calls.length ? { ...run, pending: { ...pending, done } } : { ...run, step: run.step + 1, pending: null };
  return {
    ...cp,
    conv: apply(cp.conv, events),
    transcript: [...cp.transcript, { kind: 'tool_result', callId: call.callId, name: call.name, ok: outcome.ok, result: outcome.result }],
    active,
    outbox,
  };
}

/**
 * Ends the run: `waiting` while a validated wait is active, else `completed` (or the given outcome).
 * G6 (a forced turn when todos are unfinished and no wait is declared) belongs here, in a later issue.
 */
export function finishRun(cp: Checkpoint, at: string, outbox: readonly OutboxEntry[] = [], forced?: { outcome: RunOutcome; detail: string }): Checkpoint {
  const run = cp.active!;
  const waiting = cp.conv.status === 'running' && cp.conv.waitForTasks.length > 0;
  const outcome: RunOutcome = forced?.outcome ?? (waiting ? 'waiting' : 'completed');
  const events = decider.decide({ type: 'FinishRun', data: { runId: run.runId, outcome, ...(forced ? { detail: forced.detail } : {}) }, metadata: { at, actor: run.userId } }, cp.conv);
  return { ...cp, conv: apply(cp.conv, events), active: null, outbox: [...outbox, ...events.map((event) => ({ msgId: `run:${run.runId}:finished`, event }))] };
}
