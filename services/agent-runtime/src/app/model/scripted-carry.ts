import type { Todo } from '@handplane/domain';
import { TERMINAL, waitEntries } from './scripted-plan';
import type { ModelResponse, ReadOutputResult, ToolCall, TranscriptEntry } from './transcript';

const HUMAN: ReadonlySet<string> = new Set(['user', 'answer', 'approval']);

/** What the transcript says of the tasks bound to the todo list. */
interface Knowledge {
  /** The last todo list the runtime accepted. */
  todos?: Todo[];
  /** Tasks known to have finished (task event, a read or an exec result saying so). */
  finished: Set<string>;
  /** Tasks whose output was read after `since`. */
  readSince: Set<string>;
  /** Tasks an accepted wait named after `since`. */
  waitedSince: Set<string>;
  /** A wait was refused after `since`. */
  refusedSince: boolean;
}

function knowledge(t: readonly TranscriptEntry[], since: number): Knowledge {
  const k: Knowledge = { finished: new Set(), readSince: new Set(), waitedSince: new Set(), refusedSince: false };
  const calls = new Map<string, ToolCall>();
  t.forEach((e, i) => {
    if (e.kind === 'assistant') e.toolCalls.forEach((c) => calls.set(c.callId, c));
    else if (e.kind === 'task_event') k.finished.add(e.taskId);
    else if (e.kind === 'tool_result') {
      const c = calls.get(e.callId);
      const r = e.result as Partial<ReadOutputResult> | null;
      if (e.ok && r?.taskId && r.status && TERMINAL.has(r.status)) k.finished.add(r.taskId);
      if (c?.name === 'read_output' && i > since) k.readSince.add(String(c.args.taskId));
      if (c?.name !== 'write_todos') return;
      const wait = waitEntries(c).map((w) => w.taskId);
      if (e.ok) k.todos = (c.args.todos as Todo[]).map((x) => ({ ...x, taskIds: x.taskIds ?? [] }));
      if (i > since && e.ok) wait.forEach((id) => k.waitedSince.add(id));
      if (i > since && !e.ok && wait.length) k.refusedSince = true;
    }
  });
  return k;
}

/** The last entry refuses a read or a todo list without a wait (a refused wait is looked into instead). */
function refusedCompletion(t: readonly TranscriptEntry[]): boolean {
  const last = t[t.length - 1];
  if (last?.kind !== 'tool_result' || last.ok) return false;
  if (last.name === 'read_output') return true;
  if (last.name !== 'write_todos') return false;
  const call = t.flatMap((e) => (e.kind === 'assistant' ? e.toolCalls : [])).find((c) => c.callId === last.callId);
  return !(call ? waitEntries(call) : []).length;
}

/**
 * The earlier plan's unfinished todos that are bound to tasks: wait for the tasks still running
 * (a person's message, answer or decision ended the wait, G7), or read and complete the todos whose
 * tasks finished. Undefined when there is nothing to do (or a refused wait has already been looked into).
 */
export function carryOn(t: readonly TranscriptEntry[], messageAt: number, callId: string): ModelResponse | undefined {
  let since = messageAt;
  t.forEach((e, i) => HUMAN.has(e.kind) && (since = i));
  if (refusedCompletion(t)) return undefined; // never loop on a refusal
  const k = knowledge(t, since);
  const open = (k.todos ?? []).filter((x) => x.status !== 'completed' && x.taskIds.length);
  if (!open.length) return undefined;
  const done = open.filter((x) => x.taskIds.every((id) => k.finished.has(id)));
  const unread = done.flatMap((x) => x.taskIds).find((id) => !k.readSince.has(id));
  if (unread) return { toolCalls: [{ callId, name: 'read_output', args: { taskId: unread } }] };
  if (done.length) {
    const todos = k.todos!.map((x) => (done.includes(x) ? { ...x, status: 'completed' as const } : x));
    return { toolCalls: [{ callId, name: 'write_todos', args: { todos, wait_for_tasks: [] } }] };
  }
  const running = [...new Set(open.flatMap((x) => x.taskIds).filter((id) => !k.finished.has(id)))];
  if (running.every((id) => k.waitedSince.has(id))) return undefined;
  if (k.refusedSince) {
    // The host refused the wait: look at the tasks once; what still runs is left to the next turn.
    const look = running.find((id) => !k.readSince.has(id));
    return look ? { toolCalls: [{ callId, name: 'read_output', args: { taskId: look } }] } : undefined;
  }
  return { toolCalls: [{ callId, name: 'write_todos', args: { todos: k.todos, wait_for_tasks: running } }] };
}
