import type { Todo } from '@handplane/domain';
import type { ExecBackgrounded, ExecFinished, ModelResponse, ReadOutputResult, ToolCall, ToolError, TranscriptEntry } from './transcript';

/**
 * The built-in scripted model (DESIGN.md §8): a pure function of the transcript, so a run resumes
 * from its checkpoint and tests are exact. For now it reads `$ <command>` lines only; the
 * misbehaving directives (`#fake-complete`, `#poll`, `#detach`, `#idle`) and `? <question>` come
 * with the governance middleware of a later issue and are ignored until then.
 */
export function scriptedModel(transcript: readonly TranscriptEntry[]): ModelResponse {
  const start = lastUserIndex(transcript);
  if (start < 0) return END;
  const user = transcript[start] as Extract<TranscriptEntry, { kind: 'user' }>;
  const plan = replay(parseCommands(user.text), user.messageId, transcript.slice(start + 1));
  const nextCallId = `call-${countCalls(transcript) + 1}`;
  return decideNext(plan, nextCallId, transcript[transcript.length - 1]!);
}

/** The `$ <command>` lines of a message, in order. */
export function parseCommands(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => /^\s*\$\s+(.*\S)\s*$/.exec(l)?.[1])
    .filter((c): c is string => c !== undefined);
}

type Outcome = { kind: 'exit'; status: string; exitCode: number | null; signal: string | null } | { kind: 'error'; message: string };
type TaskInfo = Extract<TranscriptEntry, { kind: 'task_event' }>;

interface CommandState {
  readonly command: string;
  callId?: string;
  taskId?: string;
  background?: boolean;
  outcome?: Outcome;
}

interface Plan {
  readonly messageId: string;
  readonly commands: CommandState[];
  /** Statuses of the last todo list the runtime accepted; undefined before the first one. */
  todos?: Todo[];
  readonly finishedTasks: Map<string, TaskInfo>;
  readonly reads: Map<string, ReadOutputResult | ToolError>;
  readonly waits: Map<string, { accepted: boolean; reason?: string }>;
  /** Set when the turn ended with text while every command had its outcome. */
  summarySent: boolean;
  /** Any text reply so far (for a message with nothing to run). */
  replied: boolean;
  /** Why the last todo list without a wait was refused (cleared by an accepted one). */
  refusedTodos?: string;
}

const END: ModelResponse = { toolCalls: [] };
const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

function lastUserIndex(t: readonly TranscriptEntry[]): number {
  for (let i = t.length - 1; i >= 0; i--) if (t[i]!.kind === 'user') return i;
  return -1;
}

function countCalls(t: readonly TranscriptEntry[]): number {
  return t.reduce((n, e) => n + (e.kind === 'assistant' ? e.toolCalls.length : 0), 0);
}

function replay(commands: string[], messageId: string, entries: readonly TranscriptEntry[]): Plan {
  const plan: Plan = { messageId, commands: commands.map((command) => ({ command })), finishedTasks: new Map(), reads: new Map(), waits: new Map(), summarySent: false, replied: false };
  const calls = new Map<string, ToolCall>();
  let execs = 0;
  for (const e of entries) {
    switch (e.kind) {
      case 'assistant':
        for (const c of e.toolCalls) {
          calls.set(c.callId, c);
          if (c.name === 'exec' && execs < plan.commands.length) plan.commands[execs++]!.callId = c.callId;
        }
        if (e.toolCalls.length === 0 && e.text) {
          plan.replied = true;
          if (plan.commands.every((c) => c.outcome)) plan.summarySent = true;
        }
        break;
      case 'tool_result': {
        const call = calls.get(e.callId);
        if (call) applyResult(plan, call, e.ok, e.result);
        break;
      }
      case 'task_event':
        plan.finishedTasks.set(e.taskId, e);
        break;
      case 'user':
        break;
    }
  }
  return plan;
}

function applyResult(plan: Plan, call: ToolCall, ok: boolean, result: unknown): void {
  if (call.name === 'exec') {
    const cmd = plan.commands.find((c) => c.callId === call.callId);
    if (!cmd) return;
    const started = (result as { taskId?: string }).taskId;
    // A failed exec that names its task started it: the task may still run, so it is waited for.
    if (!ok && started) Object.assign(cmd, { taskId: started, background: true });
    else if (!ok) cmd.outcome = { kind: 'error', message: (result as ToolError).error?.message ?? 'exec failed' };
    else if ((result as ExecBackgrounded).status === 'running_in_background') Object.assign(cmd, { taskId: (result as ExecBackgrounded).taskId, background: true });
    else {
      const r = result as ExecFinished;
      Object.assign(cmd, { taskId: r.taskId, outcome: { kind: 'exit', status: r.status, exitCode: r.exitCode, signal: r.signal } });
    }
  } else if (call.name === 'write_todos') {
    const waitFor = (call.args.wait_for_tasks as string[] | undefined) ?? [];
    if (ok) plan.todos = (call.args.todos as Todo[]).map((t) => ({ ...t, taskIds: t.taskIds ?? [] }));
    plan.refusedTodos = ok || waitFor.length ? undefined : ((result as ToolError).error?.message ?? 'refused');
    for (const id of waitFor) plan.waits.set(id, ok ? { accepted: true } : { accepted: false, reason: (result as ToolError).error?.message });
  } else if (call.name === 'read_output') {
    const taskId = String(call.args.taskId);
    plan.reads.set(taskId, ok ? (result as ReadOutputResult) : (result as ToolError));
    const cmd = plan.commands.find((c) => c.taskId === taskId && !c.outcome);
    if (cmd) settleAfterRead(plan, cmd, ok ? (result as ReadOutputResult) : undefined);
  }
}

/** After reading a background task's output the command is settled, if the task has finished. */
function settleAfterRead(plan: Plan, cmd: CommandState, read: ReadOutputResult | undefined): void {
  const event = plan.finishedTasks.get(cmd.taskId!);
  if (event) cmd.outcome = { kind: 'exit', status: event.status, exitCode: event.exitCode, signal: event.signal };
  else if (read && TERMINAL.has(read.status)) cmd.outcome = { kind: 'exit', status: read.status, exitCode: read.exitCode, signal: read.signal };
}

function decideNext(plan: Plan, callId: string, last: TranscriptEntry): ModelResponse {
  if (plan.commands.length === 0) {
    return plan.replied ? END : { toolCalls: [], text: 'There is nothing for me to run: write one command per line as `$ <command>`.' };
  }
  // A refused todo list without a wait would be refused again: say so instead of looping.
  if (last.kind === 'tool_result' && last.name === 'write_todos' && !last.ok && plan.refusedTodos) {
    return { toolCalls: [], text: `I could not update the todo list: ${plan.refusedTodos}` };
  }
  if (!plan.todos) return writeTodos(callId, expectedTodos(plan, 0), []);
  const i = plan.commands.findIndex((c) => !c.outcome);
  if (i < 0) {
    if (!sameStatuses(plan.todos, expectedTodos(plan, plan.commands.length))) return writeTodos(callId, expectedTodos(plan, plan.commands.length), []);
    return plan.summarySent ? END : { toolCalls: [], text: summary(plan) };
  }
  const cmd = plan.commands[i]!;
  if (!cmd.callId) {
    if (!sameStatuses(plan.todos, expectedTodos(plan, i))) return writeTodos(callId, expectedTodos(plan, i), []);
    return { toolCalls: [{ callId, name: 'exec', args: { command: cmd.command } }] };
  }
  return nextForBackground(plan, i, callId, last);
}

/** The command `i` runs in the background: wait for it, or read it once it has finished. */
function nextForBackground(plan: Plan, i: number, callId: string, last: TranscriptEntry): ModelResponse {
  const cmd = plan.commands[i]!;
  const taskId = cmd.taskId!;
  const readOutput = { toolCalls: [{ callId, name: 'read_output', args: { taskId } }] };
  if (plan.finishedTasks.has(taskId)) return readOutput;
  const wait = plan.waits.get(taskId);
  if (!wait) return writeTodos(callId, expectedTodos(plan, i), [taskId]);
  if (wait.accepted) {
    // Say so once, in the turn that declared the wait; a wake-up for another task changes nothing.
    const justDeclared = last.kind === 'tool_result' && last.name === 'write_todos' && last.ok;
    return justDeclared ? { toolCalls: [], text: `\`${cmd.command}\` is running in the background (task ${taskId}); I will continue when it finishes.` } : END;
  }
  // The host refused the wait: most likely the task finished meanwhile, so look at it once.
  if (!plan.reads.has(taskId)) return readOutput;
  return { toolCalls: [], text: `I could not wait for task ${taskId} (\`${cmd.command}\`): ${wait.reason ?? 'the host refused the wait'}` };
}

function expectedTodos(plan: Plan, current: number): Todo[] {
  return plan.commands.map((c, k) => ({
    id: `${plan.messageId}-${k + 1}`,
    content: `Run \`${c.command}\``,
    status: k < current ? 'completed' : k === current ? 'in_progress' : 'pending',
    taskIds: c.taskId ? [c.taskId] : [],
  }));
}

function sameStatuses(a: readonly Todo[], b: readonly Todo[]): boolean {
  return a.length === b.length && a.every((t, k) => t.id === b[k]!.id && t.status === b[k]!.status);
}

function writeTodos(callId: string, todos: Todo[], waitForTasks: string[]): ModelResponse {
  return { toolCalls: [{ callId, name: 'write_todos', args: { todos, wait_for_tasks: waitForTasks } }] };
}

function summary(plan: Plan): string {
  return plan.commands.map((c) => `\`${c.command}\` → ${describe(c.outcome!)}`).join('\n');
}

function describe(o: Outcome): string {
  if (o.kind === 'error') return `not run: ${o.message}`;
  const code = o.exitCode !== null ? `exit ${o.exitCode}` : o.signal ? `signal ${o.signal}` : 'no exit code';
  return o.status === 'succeeded' || o.status === 'failed' ? code : `${code} (${o.status})`;
}
