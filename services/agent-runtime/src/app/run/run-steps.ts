import {
  conversationRunDecider as decider,
  hasActiveWait,
  suspensionIssue,
  type ConversationEvent,
  type ConversationRunCommand,
  type ConversationRunEvent,
  type ConversationRunState,
  type RunOutcome,
} from '@handplane/domain';
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
/** G6: turns forced in one run before the runtime asks the user instead. */
export const MAX_FORCED_TURNS = 2;

function apply(state: ConversationRunState, events: readonly ConversationEvent[]): ConversationRunState {
  return events.reduce((s, e) => decider.evolve(s, e), state);
}

function decide(state: ConversationRunState, command: ConversationRunCommand): { events: ConversationRunEvent[]; state: ConversationRunState } {
  const events = decider.decide(command, state);
  return { events, state: apply(state, events) };
}

/** An answer or approval decision for something no longer open (answered twice, unknown): it starts nothing. */
export function isStale(cp: Checkpoint, item: WorkItem): boolean {
  const open = cp.conv.open ?? [];
  if (item.kind === 'answer') return !open.some((o) => o.kind === 'question' && o.id === item.answer.questionId);
  if (item.kind === 'approval') return item.decision.automated || !open.some((o) => o.kind === 'approval' && o.id === item.decision.approvalId);
  return false;
}

/** The person's event as the runtime's state sees it (it was appended by the gateway). */
function externalEvent(item: WorkItem): ConversationEvent | undefined {
  const metadata = { at: '', actor: item.userId };
  if (item.kind === 'answer') return { type: 'question.answered', data: item.answer, metadata };
  if (item.kind === 'approval') return { type: 'approval.resolved', data: item.decision, metadata };
  return undefined;
}

function runData(cp: Checkpoint, item: WorkItem, runId: string) {
  switch (item.kind) {
    case 'message':
      return { runId, userId: item.userId, trigger: 'message' as const, messageId: item.message.messageId };
    case 'wakeup':
      // A condition's row key is its id; the run is about its task.
      return { runId, userId: item.userId, trigger: 'task_event' as const, taskId: item.event.taskId };
    case 'answer':
      return { runId, userId: item.userId, trigger: 'answer' as const, questionId: item.answer.questionId };
    case 'approval': {
      // The approved command runs for the user whose run asked for it (G9), not for the approver.
      const asker = (cp.conv.open ?? []).find((o) => o.id === item.decision.approvalId)?.userId;
      return { runId, userId: asker || item.userId, trigger: 'approval' as const, approvalId: item.decision.approvalId };
    }
  }
}

/** The `exec` call a person approved, found by its approval id in the transcript. */
function approvedCall(transcript: readonly TranscriptEntry[], approvalId: string): { call: ToolCall; command: string } | undefined {
  const result = transcript.find((e) => e.kind === 'tool_result' && (e.result as { approvalId?: unknown } | null)?.approvalId === approvalId);
  if (!result || result.kind !== 'tool_result') return undefined;
  for (const e of transcript) {
    if (e.kind !== 'assistant') continue;
    const call = e.toolCalls.find((c) => c.callId === result.callId);
    if (call) return { call, command: String(call.args.command ?? '') };
  }
  return undefined;
}

/** Starts a run for the next queued item: `run.started` (after `wait.invalidated` for human input, G7) and the item in the transcript. */
export function startRun(cp: Checkpoint, item: WorkItem, runId: string, at: string): Checkpoint {
  const data = runData(cp, item, runId);
  const external = externalEvent(item);
  const before = external ? apply(cp.conv, [external]) : cp.conv;
  const { events, state } = decide(before, { type: 'StartRun', data, metadata: { at, actor: data.userId } });
  const outbox: OutboxEntry[] = events.map((event) => ({ msgId: `run:${runId}:${event.type === 'run.started' ? 'started' : event.type}`, event }));
  let active: ActiveRun = { ...data, step: 0, pending: null };
  let entry: TranscriptEntry;
  if (item.kind === 'message') entry = { kind: 'user', messageId: item.message.messageId, userId: item.userId, text: item.message.text };
  else if (item.kind === 'wakeup') entry = 'conditionId' in item.event ? { kind: 'task_condition', ...item.event } : { kind: 'task_event', ...item.event };
  else if (item.kind === 'answer') entry = { kind: 'answer', questionId: item.answer.questionId, text: item.answer.text, by: item.answer.by };
  else {
    const d = item.decision;
    const found = approvedCall(cp.transcript, d.approvalId);
    const rerun = d.decision === 'approve' && found;
    const callId = `approved-${d.approvalId}`;
    entry = { kind: 'approval', approvalId: d.approvalId, decision: d.decision, by: d.by, command: found?.command ?? '', ...(rerun ? { callId } : {}) };
    if (rerun) {
      // The runtime runs the approved command itself, as a call of this run's first step.
      const call: ToolCall = { callId, name: 'exec', args: found.call.args, approvalId: d.approvalId };
      active = { ...active, pending: { calls: [call], done: 0, snapshot: state } };
      outbox.push({ msgId: `run:${runId}:0:called:${callId}`, event: { type: 'tool.called', data: { runId, callId, name: 'exec', args: publicArgs(call) }, metadata: { at, actor: data.userId } } });
    }
  }
  return { ...cp, conv: state, transcript: [...cp.transcript, entry], active, outbox };
}

/** User messages that arrived during the run steer it: into the transcript, and they end its wait (G7). */
export function steer(cp: Checkpoint, messages: readonly Extract<WorkItem, { kind: 'message' }>[], at: string): Checkpoint {
  const run = cp.active!;
  let conv = cp.conv;
  const outbox: OutboxEntry[] = [];
  const entries: TranscriptEntry[] = [];
  for (const m of messages) {
    const r = decide(conv, { type: 'SteerRun', data: { runId: run.runId, messageId: m.message.messageId }, metadata: { at, actor: m.userId } });
    conv = r.state;
    outbox.push(...r.events.map((event) => ({ msgId: `run:${run.runId}:steer:${m.seq}`, event })));
    entries.push({ kind: 'user', messageId: m.message.messageId, userId: m.userId, text: m.message.text });
  }
  return { ...cp, conv, transcript: [...cp.transcript, ...entries], outbox };
}

/** Records a model response: its text and tool calls; no tool calls ends the turn, unless G6 forces another. */
export function afterModel(cp: Checkpoint, response: ModelResponse, at: string): Checkpoint {
  const run = cp.active!;
  const meta = { at, actor: run.userId };
  const base = `run:${run.runId}:${run.step}`;
  // Only the runtime marks a call as approved by a person.
  const toolCalls = response.toolCalls.map(({ approvalId: _ignored, ...c }) => c);
  const outbox: OutboxEntry[] = [];
  if (response.text) outbox.push({ msgId: `${base}:text`, event: { type: 'assistant.message', data: { runId: run.runId, text: response.text }, metadata: meta } });
  for (const c of toolCalls) outbox.push({ msgId: `${base}:called:${c.callId}`, event: { type: 'tool.called', data: { runId: run.runId, callId: c.callId, name: c.name, args: publicArgs(c) }, metadata: meta } });
  const entry: TranscriptEntry = { kind: 'assistant', runId: run.runId, toolCalls, ...(response.text ? { text: response.text } : {}) };
  const next: Checkpoint = { ...cp, transcript: [...cp.transcript, entry], outbox };
  if (toolCalls.length) return { ...next, active: { ...run, pending: { calls: toolCalls, done: 0, snapshot: cp.conv } } };
  return endTurn(next, at, outbox);
}

/** G6: the model ended its turn. It may when nothing is unfinished or a wait backs it; else another turn, and after two, a question. */
function endTurn(cp: Checkpoint, at: string, outbox: OutboxEntry[]): Checkpoint {
  const run = cp.active!;
  const issue = suspensionIssue(cp.conv);
  if (!issue) return finishRun(cp, at, outbox);
  const meta = { at, actor: run.userId };
  const forced = run.forced ?? 0;
  const base = `run:${run.runId}:${run.step}`;
  if (forced < MAX_FORCED_TURNS) {
    outbox.push({ msgId: `${base}:g6`, event: { type: 'guard.rejected', data: { runId: run.runId, rule: 'G6', detail: issue }, metadata: meta } });
    const guard: TranscriptEntry = { kind: 'guard', rule: 'G6', detail: issue };
    return { ...cp, transcript: [...cp.transcript, guard], active: { ...run, step: run.step + 1, forced: forced + 1, pending: null }, outbox };
  }
  const detail = `${issue} The agent ended its turn this way ${forced + 1} times, so the run asks you how to go on.`;
  outbox.push({ msgId: `${base}:g6`, event: { type: 'guard.rejected', data: { runId: run.runId, rule: 'G6', detail }, metadata: meta } });
  const text = `I stopped ${forced + 1} times with unfinished work and nothing to wait for: ${cp.conv.todos
    .filter((t) => t.status !== 'completed')
    .map((t) => t.content)
    .join('; ')}. How should I continue?`;
  const { events, state } = decide(cp.conv, { type: 'AskQuestion', data: { runId: run.runId, questionId: `g6-${run.runId}`, text }, metadata: meta });
  outbox.push(...events.map((event) => ({ msgId: `${base}:g6:question`, event })));
  return finishRun({ ...cp, conv: state }, at, outbox);
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

/** Ends the run: `waiting` while a validated wait or an open question or approval backs it, else `completed` (or the given outcome). */
export function finishRun(cp: Checkpoint, at: string, outbox: readonly OutboxEntry[] = [], forced?: { outcome: RunOutcome; detail: string }): Checkpoint {
  const run = cp.active!;
  const outcome: RunOutcome = forced?.outcome ?? (hasActiveWait(cp.conv) ? 'waiting' : 'completed');
  const { events, state } = decide(cp.conv, { type: 'FinishRun', data: { runId: run.runId, outcome, ...(forced ? { detail: forced.detail } : {}) }, metadata: { at, actor: run.userId } });
  return { ...cp, conv: state, active: null, outbox: [...outbox, ...events.map((event) => ({ msgId: `run:${run.runId}:finished`, event }))] };
}
