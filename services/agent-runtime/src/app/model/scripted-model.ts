import type { WaitUntil } from '@handplane/contracts';
import type { Todo } from '@handplane/domain';
import { MISBEHAVIOUR, parseScript, POLL_COMMAND, ready, replay, type CommandState, type Directive, type Outcome, type Plan } from './scripted-plan';
import { carryOn } from './scripted-carry';
import type { ModelResponse, TranscriptEntry } from './transcript';

export { parseCommands } from './scripted-plan';

/**
 * The built-in scripted model (DESIGN.md §8): a pure function of the transcript, so a run resumes
 * from its checkpoint and tests are exact. For the last user message it reads `$ <command>` lines
 * (one todo each, run in order with `exec`; a command that goes to the background is waited for
 * with `wait_for_tasks` and read when it wakes the run; finally a summary of exit codes) and
 * `? <question>` lines (asked with `ask_user`; the answer continues the plan), and `< <text>`
 * lines after a command (its input: written with `write_stdin` once the command runs in the
 * background, e.g. the answer to a `[y/N]` prompt), and `~ output <regex>` / `~ port <n>` /
 * `~ file <path>` after a command (a condition wait: once the command runs in the background the
 * model waits until the condition holds, goes on with the next steps while it keeps running, and
 * waits for its exit at the end). `#fake-complete`,
 * `#poll`, `#detach` and `#idle` make it misbehave once each, on purpose; the runtime must refuse
 * every attempt, after which it behaves. Before ending a turn it looks after the todos of earlier
 * messages still open (a person's message ends the wait, G7): it waits for their tasks again, or
 * reads and completes them when they have finished.
 */
export function scriptedModel(transcript: readonly TranscriptEntry[]): ModelResponse {
  const start = lastUserIndex(transcript);
  if (start < 0) return END;
  const user = transcript[start] as Extract<TranscriptEntry, { kind: 'user' }>;
  const plan = replay(parseScript(user.text), user.messageId, transcript.slice(start + 1));
  const nextCallId = `call-${countCalls(transcript) + 1}`;
  const r = decideNext(plan, nextCallId, transcript[transcript.length - 1]!);
  if (r.toolCalls.length) return r;
  // Before ending its turn: the earlier plan's unfinished todos still need their wait, or their result.
  const carry = carryOn(transcript, start, nextCallId);
  return carry ? { ...carry, ...(r.text ? { text: r.text } : {}) } : r;
}

const END: ModelResponse = { toolCalls: [] };

function lastUserIndex(t: readonly TranscriptEntry[]): number {
  for (let i = t.length - 1; i >= 0; i--) if (t[i]!.kind === 'user') return i;
  return -1;
}

function countCalls(t: readonly TranscriptEntry[]): number {
  return t.reduce((n, e) => n + (e.kind === 'assistant' ? e.toolCalls.length : 0), 0);
}

/** A misbehaviour the message asked for and that was not tried yet. */
function wants(plan: Plan, d: Directive): boolean {
  return plan.script.directives.has(d) && !plan.tried.has(d);
}

/** Something happened the user has not been told about yet (say it once). */
const untold = (plan: Plan) => plan.lastNewsAt > plan.lastTextAt;

function decideNext(plan: Plan, callId: string, last: TranscriptEntry): ModelResponse {
  if (plan.script.badUntil.length) {
    return plan.replied ? END : { toolCalls: [], text: `I do not know the condition \`~ ${plan.script.badUntil[0]}\`: write \`~ output <regex>\`, \`~ port <number>\` or \`~ file <path>\` after a command.` };
  }
  if (plan.script.steps.length === 0) {
    return plan.replied ? END : { toolCalls: [], text: 'There is nothing for me to run: write one command per line as `$ <command>`, or a question as `? <question>`.' };
  }
  // A refused todo list without a wait would be refused again: say so instead of looping.
  if (last.kind === 'tool_result' && last.name === 'write_todos' && !last.ok && plan.refusedTodos) {
    return { toolCalls: [], text: `I could not update the todo list: ${plan.refusedTodos}` };
  }
  if (plan.commands.length && !plan.todos) return writeTodos(callId, expectedTodos(plan, 0), []);
  // A command whose condition held and which has finished since: read it now, it is done.
  const doneReady = plan.commands.find((c) => ready(c) && plan.finishedTasks.has(c.taskId!) && !plan.reads.has(c.taskId!));
  if (doneReady) return { toolCalls: [{ callId, name: 'read_output', args: { taskId: doneReady.taskId } }] };
  const step = plan.script.steps.find((s) => (s.kind === 'command' ? !plan.commands[s.index]!.outcome && !ready(plan.commands[s.index]!) : plan.questions[s.index]!.answer === undefined));
  if (!step) {
    // Every step is done but commands whose condition held still run: wait for their exit.
    const running = plan.commands.findIndex(ready);
    if (running >= 0) return nextForBackground(plan, running, callId);
    if (plan.commands.length && !sameStatuses(plan.todos!, expectedTodos(plan, plan.commands.length))) return writeTodos(callId, expectedTodos(plan, plan.commands.length), []);
    return plan.summarySent ? END : { toolCalls: [], text: summary(plan) };
  }
  const current = plan.commands.filter((c) => c.outcome).length;
  if (step.kind === 'question') {
    const q = plan.questions[step.index]!;
    if (q.callId) return untold(plan) ? { toolCalls: [], text: `I asked: ${q.text} I will continue when you answer.` } : END;
    if (wants(plan, 'idle')) return { toolCalls: [], text: MISBEHAVIOUR.idle };
    if (plan.commands.length && !sameStatuses(plan.todos!, expectedTodos(plan, current))) return writeTodos(callId, expectedTodos(plan, current), []);
    return { toolCalls: [{ callId, name: 'ask_user', args: { question: q.text } }] };
  }
  const i = step.index;
  const cmd = plan.commands[i]!;
  if (cmd.approval?.state === 'pending') {
    return untold(plan) ? { toolCalls: [], text: `\`${cmd.command}\` needs a person's approval (${cmd.approval.id}); I will continue when someone decides.` } : END;
  }
  if (!cmd.callId) {
    if (wants(plan, 'idle')) return { toolCalls: [], text: MISBEHAVIOUR.idle };
    if (!sameStatuses(plan.todos!, expectedTodos(plan, i))) return writeTodos(callId, expectedTodos(plan, i), []);
    if (wants(plan, 'detach')) return { text: MISBEHAVIOUR.detach, toolCalls: [{ callId, name: 'exec', args: { command: `${cmd.command} &` } }] };
    return { toolCalls: [{ callId, name: 'exec', args: { command: cmd.command } }] };
  }
  if (!cmd.taskId) return END; // its approved run is under way
  return nextForBackground(plan, i, callId);
}

/** The other commands whose condition held and that still run: every wait names them too (their todos stay open). */
function readyRunning(plan: Plan, except: string): string[] {
  return plan.commands.filter((c) => ready(c) && c.taskId !== except && !plan.finishedTasks.has(c.taskId!)).map((c) => c.taskId!);
}

/** What the wait on `cmd` is for: its `~` condition until that resolves, then its exit. */
const waitingOn = (plan: Plan, cmd: CommandState, i: number) => (plan.script.until[i] !== undefined && cmd.condition === undefined ? plan.script.until[i]! : undefined);

/**
 * The command `i` runs in the background: wait for it (after any misbehaviour asked for) — until
 * its `~` condition holds if it has one, else until it exits — or read it once it has finished.
 */
function nextForBackground(plan: Plan, i: number, callId: string): ModelResponse {
  const cmd = plan.commands[i]!;
  const taskId = cmd.taskId!;
  const readOutput = { toolCalls: [{ callId, name: 'read_output', args: { taskId } }] };
  if (plan.finishedTasks.has(taskId)) return readOutput;
  // The command waits for its `< input` lines (a prompt): write them once, then wait as for any task.
  const input = plan.script.stdin[i];
  if (input?.length && !cmd.stdinSent) {
    return { toolCalls: [{ callId, name: 'write_stdin', args: { taskId, attempt: cmd.attempt ?? 1, data: input.map((l) => `${l}\n`).join('') } }] };
  }
  const until = waitingOn(plan, cmd, i);
  const wait = plan.waits.get(taskId);
  const current = ready(cmd) ? plan.commands.length : i;
  // Declared again when what it waits on changed (condition → exit) or a todo's status did (a
  // command whose condition held finished and was read): the list always says where things stand.
  if (!wait || wait.condition !== (until !== undefined) || (wait.accepted && !sameStatuses(plan.todos!, expectedTodos(plan, current)))) {
    if (!wait && wants(plan, 'fake-complete')) {
      const done = expectedTodos(plan, i).map((t, k) => (k === i ? { ...t, status: 'completed' as const } : t));
      return { text: MISBEHAVIOUR['fake-complete'], toolCalls: [{ callId, name: 'write_todos', args: { todos: done, wait_for_tasks: [] } }] };
    }
    if (!wait && wants(plan, 'poll')) return { text: MISBEHAVIOUR.poll, toolCalls: [{ callId, name: 'exec', args: { command: POLL_COMMAND } }] };
    return writeTodos(callId, expectedTodos(plan, current), [until ? { taskId, until } : taskId, ...readyRunning(plan, taskId)]);
  }
  if (wait.accepted) {
    // Say so once, in the turn that declared the wait; a wake-up for another task changes nothing.
    const what = until ? `when ${describeUntil(until)}` : 'when it finishes';
    return untold(plan) ? { toolCalls: [], text: `\`${cmd.command}\` is running in the background (task ${taskId}); I will continue ${what}.` } : END;
  }
  // The host refused the wait: most likely the task finished meanwhile, so look at it once.
  if (!plan.reads.has(taskId)) return readOutput;
  return { toolCalls: [], text: `I could not wait for task ${taskId} (\`${cmd.command}\`): ${wait.reason ?? 'the host refused the wait'}` };
}

/**
 * The todo list with command `current` under way: done commands completed, later ones pending.
 * Only one todo may be in progress: a command whose condition held and that still runs is
 * `pending` ("ready, still running") while another one is under way, and in progress again when
 * only its exit is left to wait for.
 */
function expectedTodos(plan: Plan, current: number): Todo[] {
  const here = plan.commands[current];
  const focus = here && !here.outcome && !ready(here) ? current : plan.commands.findIndex(ready);
  return plan.commands.map((c, k) => ({
    id: `${plan.messageId}-${k + 1}`,
    content: `Run \`${c.command}\`${ready(c) && k !== focus ? ' (ready, still running)' : ''}`,
    status: c.outcome ? 'completed' : k === focus ? 'in_progress' : ready(c) ? 'pending' : k < current ? 'completed' : 'pending',
    taskIds: c.taskId ? [c.taskId] : [],
  }));
}

function describeUntil(u: WaitUntil): string {
  if (u === 'exit') return 'it exits';
  if ('outputMatches' in u) return `its output matches /${u.outputMatches}/`;
  if ('portOpen' in u) return `port ${u.portOpen} is open`;
  return `${u.fileExists} exists`;
}

function sameStatuses(a: readonly Todo[], b: readonly Todo[]): boolean {
  return a.length === b.length && a.every((t, k) => t.id === b[k]!.id && t.status === b[k]!.status);
}

function writeTodos(callId: string, todos: Todo[], waitForTasks: (string | { taskId: string; until: WaitUntil })[]): ModelResponse {
  return { toolCalls: [{ callId, name: 'write_todos', args: { todos, wait_for_tasks: waitForTasks } }] };
}

function summary(plan: Plan): string {
  return plan.script.steps
    .map((s) => {
      if (s.kind === 'question') return `? ${plan.questions[s.index]!.text} → ${plan.questions[s.index]!.answer}`;
      const c = plan.commands[s.index]!;
      const cond = c.condition ? `${c.condition.outcome === 'matched' ? 'ready' : 'condition not met in time'} (${c.condition.detail}), then ` : '';
      return `\`${c.command}\` → ${cond}${describe(c.outcome!)}`;
    })
    .join('\n');
}

function describe(o: Outcome): string {
  if (o.kind === 'error') return `not run: ${o.message}`;
  // Anything but a plain exit is told as its receipt says (killed at whose request, lost, …).
  if (o.receipt && o.receipt.outcome !== 'exited') return `${o.receipt.summary} (${o.status})`;
  const code = o.exitCode !== null ? `exit ${o.exitCode}` : o.signal ? `signal ${o.signal}` : 'no exit code';
  return o.status === 'succeeded' || o.status === 'failed' ? code : `${code} (${o.status})`;
}

