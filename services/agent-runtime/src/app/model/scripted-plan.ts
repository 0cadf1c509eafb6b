import type { WaitUntil } from '@handplane/contracts';
import type { Todo } from '@handplane/domain';
import type { ExecAwaitingApproval, ExecBackgrounded, ExecFinished, QuestionPosted, ReadOutputResult, ToolCall, ToolError, TranscriptEntry } from './transcript';

/** The misbehaviours a message can ask the scripted model for (DESIGN.md §8), each tried once. */
export type Directive = 'fake-complete' | 'poll' | 'detach' | 'idle';
const DIRECTIVES: readonly Directive[] = ['fake-complete', 'poll', 'detach', 'idle'];

/** The text of a misbehaving response: it marks the attempt in the transcript, so a replay knows it was made. */
export const MISBEHAVIOUR: Record<Directive, string> = {
  detach: '(#detach) Starting it in the background with `&`.',
  poll: '(#poll) Checking on it with sleep and ps.',
  'fake-complete': '(#fake-complete) Marking it done already.',
  idle: '(#idle) Stopping here for now.',
};
export const POLL_COMMAND = 'sleep 5 && ps aux';

export type Step = { readonly kind: 'command'; readonly index: number } | { readonly kind: 'question'; readonly index: number };

/** A message as a script: `$ <command>` and `? <question>` lines in order, and `#directive` lines. */
export interface Script {
  readonly commands: string[];
  readonly questions: string[];
  readonly steps: Step[];
  readonly directives: ReadonlySet<Directive>;
  /** `< <text>` lines after a command: its input, one line each (sent with `write_stdin` once it runs in the background). */
  readonly stdin: string[][];
  /**
   * `~ <condition>` after a command (issue 10.1): once it runs in the background, wait until the
   * condition holds instead of until it exits, then go on with the next steps while it keeps
   * running (and wait for its exit at the end). `~ output <regex>`, `~ port <n>`, `~ file <path>`.
   */
  readonly until: (WaitUntil | undefined)[];
  /** `~` lines that name no condition this model knows: said back to the user instead of run. */
  readonly badUntil: string[];
}

/** A `~` line's condition, or null when it names none. */
export function parseUntil(text: string): WaitUntil | null {
  const m = /^(output|port|file)\s+(.*\S)$/.exec(text.trim());
  if (!m) return null;
  if (m[1] === 'output') return { outputMatches: m[2]! };
  if (m[1] === 'file') return { fileExists: m[2]! };
  const port = Number(m[2]);
  return Number.isInteger(port) && port >= 1 && port <= 65535 ? { portOpen: port } : null;
}

/** The `$ <command>` lines of a message, in order. */
export function parseCommands(text: string): string[] {
  return parseScript(text).commands;
}

export function parseScript(text: string): Script {
  const s: Script = { commands: [], questions: [], steps: [], directives: new Set(), stdin: [], until: [], badUntil: [] };
  for (const line of text.split(/\r?\n/)) {
    const cmd = /^\s*\$\s+(.*\S)\s*$/.exec(line)?.[1];
    const question = /^\s*\?\s+(.*\S)\s*$/.exec(line)?.[1];
    const directive = /^\s*#([a-z-]+)\s*$/.exec(line)?.[1] as Directive | undefined;
    const input = /^\s*<(?: (.*))?$/.exec(line);
    const until = /^\s*~\s+(.*\S)\s*$/.exec(line)?.[1];
    if (input && s.commands.length > 0) (s.stdin[s.commands.length - 1] ??= []).push(input[1] ?? '');
    else if (until !== undefined && s.commands.length > 0) {
      const c = parseUntil(until);
      if (c) s.until[s.commands.length - 1] = c;
      else s.badUntil.push(until);
    }
    else if (cmd !== undefined) s.steps.push({ kind: 'command', index: s.commands.push(cmd) - 1 });
    else if (question !== undefined) s.steps.push({ kind: 'question', index: s.questions.push(question) - 1 });
    else if (directive && DIRECTIVES.includes(directive)) (s.directives as Set<Directive>).add(directive);
  }
  return s;
}

/** `receipt`: how the task ended (issue 10.4), when the runtime told the model. */
export type Outcome =
  | { kind: 'exit'; status: string; exitCode: number | null; signal: string | null; receipt?: { outcome: string; summary: string } }
  | { kind: 'error'; message: string };

const exitOutcome = (r: { status: string; exitCode: number | null; signal: string | null; receipt?: { outcome: string; summary: string } }): Outcome => ({
  kind: 'exit',
  status: r.status,
  exitCode: r.exitCode,
  signal: r.signal,
  ...(r.receipt ? { receipt: { outcome: r.receipt.outcome, summary: r.receipt.summary } } : {}),
});
type TaskInfo = Extract<TranscriptEntry, { kind: 'task_event' }>;

export interface CommandState {
  readonly command: string;
  callId?: string;
  taskId?: string;
  background?: boolean;
  /** The attempt `exec` reported for a background task. */
  attempt?: number;
  /** Its `< input` lines were written with `write_stdin`. */
  stdinSent?: boolean;
  outcome?: Outcome;
  approval?: { id: string; state: 'pending' | 'approve' | 'reject' };
  /** Its `~` condition resolved while it runs (a `task_condition` entry): matched, or timed out. */
  condition?: { outcome: 'matched' | 'timed_out'; detail: string };
}

export interface QuestionState {
  readonly text: string;
  callId?: string;
  questionId?: string;
  answer?: string;
}

/** What the scripted model knows after replaying the transcript since the message. */
export interface Plan {
  readonly messageId: string;
  readonly script: Script;
  readonly commands: CommandState[];
  readonly questions: QuestionState[];
  /** Statuses of the last todo list the runtime accepted; undefined before the first one. */
  todos?: Todo[];
  readonly finishedTasks: Map<string, TaskInfo>;
  readonly reads: Map<string, ReadOutputResult | ToolError>;
  /** The last wait declared on each task: on a condition (`~`) or on its exit. */
  readonly waits: Map<string, { accepted: boolean; reason?: string; condition: boolean }>;
  /** Misbehaviours already attempted. */
  readonly tried: Set<Directive>;
  /** Set when the model said something while every step was settled. */
  summarySent: boolean;
  /** Index (in the entries since the message) of the model's last text, -1 for none. */
  lastTextAt: number;
  /** Index of the last result that calls for a word to the user (question asked, approval requested, wait accepted). */
  lastNewsAt: number;
  /** Any text reply so far (for a message with nothing to run). */
  replied: boolean;
  /** Why the last todo list without a wait was refused (cleared by an accepted one). */
  refusedTodos?: string;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);
const errorOf = (result: unknown, fallback: string) => (result as ToolError | null)?.error?.message ?? fallback;

/** Replays the transcript entries since the message into the plan's state. */
export function replay(script: Script, messageId: string, entries: readonly TranscriptEntry[]): Plan {
  const plan: Plan = {
    messageId,
    script,
    commands: script.commands.map((command) => ({ command })),
    questions: script.questions.map((text) => ({ text })),
    finishedTasks: new Map(),
    reads: new Map(),
    waits: new Map(),
    tried: new Set(),
    summarySent: false,
    replied: false,
    lastTextAt: -1,
    lastNewsAt: -1,
  };
  const calls = new Map<string, ToolCall>();
  const attempts = new Set<string>(); // calls of misbehaving responses
  let execs = 0;
  let asks = 0;
  for (const [at, e] of entries.entries()) {
    if (e.kind === 'assistant') {
      const directive = (Object.keys(MISBEHAVIOUR) as Directive[]).find((d) => MISBEHAVIOUR[d] === e.text);
      if (directive) plan.tried.add(directive);
      for (const c of e.toolCalls) {
        calls.set(c.callId, c);
        if (directive) attempts.add(c.callId);
        else if (c.name === 'exec' && execs < plan.commands.length) plan.commands[execs++]!.callId = c.callId;
        else if (c.name === 'ask_user' && asks < plan.questions.length) plan.questions[asks++]!.callId = c.callId;
      }
      if (e.text && !directive) {
        plan.replied = true;
        plan.lastTextAt = at;
        if (settled(plan)) plan.summarySent = true;
      }
    } else if (e.kind === 'tool_result') {
      const call = calls.get(e.callId);
      if (call && !attempts.has(e.callId)) applyResult(plan, call, e.ok, e.result);
      if (call && !attempts.has(e.callId) && e.ok && isNews(call, e.result)) plan.lastNewsAt = at;
    } else if (e.kind === 'task_event') plan.finishedTasks.set(e.taskId, e);
    else if (e.kind === 'task_condition') {
      const cmd = plan.commands.find((c) => c.taskId === e.taskId && !c.condition);
      if (cmd) cmd.condition = { outcome: e.outcome, detail: e.detail };
    }
    else if (e.kind === 'answer') {
      const q = plan.questions.find((x) => x.questionId === e.questionId);
      if (q) q.answer = e.text;
    } else if (e.kind === 'approval') applyApproval(plan, e, calls);
  }
  return plan;
}

/** A result worth a word to the user: a question asked, an approval requested, a wait accepted. */
function isNews(call: ToolCall, result: unknown): boolean {
  if (call.name === 'ask_user') return true;
  if (call.name === 'exec') return (result as ExecAwaitingApproval | null)?.status === 'approval_pending';
  return call.name === 'write_todos' && waitEntries(call).length > 0;
}

/** The entries of a `write_todos` call's `wait_for_tasks`: task ids, or `{taskId, until}` conditions. */
export function waitEntries(call: ToolCall): { taskId: string; condition: boolean }[] {
  const raw = (call.args.wait_for_tasks as unknown[] | undefined) ?? [];
  return raw.map((e) =>
    typeof e === 'string' ? { taskId: e, condition: false } : { taskId: String((e as { taskId?: unknown }).taskId), condition: (e as { until?: unknown }).until !== 'exit' },
  );
}

/** A command whose `~` condition held: the plan goes on while it runs (its exit is waited for at the end). */
export const ready = (c: CommandState): boolean => !c.outcome && c.condition?.outcome === 'matched';

/** Every step has its outcome (commands) or answer (questions). */
export function settled(plan: Plan): boolean {
  return plan.commands.every((c) => c.outcome) && plan.questions.every((q) => q.answer !== undefined);
}

function applyApproval(plan: Plan, e: Extract<TranscriptEntry, { kind: 'approval' }>, calls: Map<string, ToolCall>): void {
  const cmd = plan.commands.find((c) => c.approval?.id === e.approvalId);
  if (!cmd) return;
  cmd.approval = { id: e.approvalId, state: e.decision };
  if (e.decision === 'reject') cmd.outcome = { kind: 'error', message: `rejected by ${e.by}` };
  else if (e.callId) {
    // The runtime runs the approved command as this call; its result follows.
    cmd.callId = e.callId;
    calls.set(e.callId, { callId: e.callId, name: 'exec', args: { command: cmd.command } });
  }
}

function applyResult(plan: Plan, call: ToolCall, ok: boolean, result: unknown): void {
  if (call.name === 'exec') return applyExec(plan, call, ok, result);
  if (call.name === 'ask_user') {
    const q = plan.questions.find((x) => x.callId === call.callId);
    if (q && ok) q.questionId = (result as QuestionPosted).questionId;
    else if (q) q.answer = `(not asked: ${errorOf(result, 'refused')})`;
    return;
  }
  if (call.name === 'write_todos') {
    const waitFor = waitEntries(call);
    if (ok) plan.todos = (call.args.todos as Todo[]).map((t) => ({ ...t, taskIds: t.taskIds ?? [] }));
    plan.refusedTodos = ok || waitFor.length ? undefined : errorOf(result, 'refused');
    for (const w of waitFor) plan.waits.set(w.taskId, ok ? { accepted: true, condition: w.condition } : { accepted: false, reason: errorOf(result, 'refused'), condition: w.condition });
    return;
  }
  if (call.name === 'write_stdin') {
    const cmd = plan.commands.find((c) => c.taskId === String(call.args.taskId));
    if (cmd) cmd.stdinSent = true;
    return;
  }
  if (call.name === 'read_output') {
    const taskId = String(call.args.taskId);
    plan.reads.set(taskId, ok ? (result as ReadOutputResult) : (result as ToolError));
    const cmd = plan.commands.find((c) => c.taskId === taskId && !c.outcome);
    if (!cmd) return;
    // After reading a background task's output the command is settled, if the task has finished.
    const event = plan.finishedTasks.get(taskId);
    const read = ok ? (result as ReadOutputResult) : undefined;
    if (event) cmd.outcome = exitOutcome(event);
    else if (read && TERMINAL.has(read.status)) cmd.outcome = exitOutcome(read);
  }
}

function applyExec(plan: Plan, call: ToolCall, ok: boolean, result: unknown): void {
  const cmd = plan.commands.find((c) => c.callId === call.callId);
  if (!cmd) return;
  const started = (result as { taskId?: string } | null)?.taskId;
  // A failed exec that names its task started it: the task may still run, so it is waited for.
  if (!ok && started) Object.assign(cmd, { taskId: started, background: true });
  else if (!ok) cmd.outcome = { kind: 'error', message: errorOf(result, 'exec failed') };
  else if ((result as ExecAwaitingApproval).status === 'approval_pending') cmd.approval = { id: (result as ExecAwaitingApproval).approvalId, state: 'pending' };
  else if ((result as ExecBackgrounded).status === 'running_in_background') {
    const r = result as ExecBackgrounded;
    Object.assign(cmd, { taskId: r.taskId, background: true, ...(r.attempt === undefined ? {} : { attempt: r.attempt }) });
  }
  else {
    const r = result as ExecFinished;
    Object.assign(cmd, { taskId: r.taskId, outcome: exitOutcome(r) });
  }
}
