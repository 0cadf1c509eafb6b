import { DeliverPolicy } from '@nats-io/jetstream';
import { decodeTaskEvent, MalformedEvent, type Topology } from '@handplane/contracts';
import type { TaskEvent, TaskReceipt, TaskStatus } from '@handplane/domain';
import type { EventStore, Nats } from '@handplane/platform';

/** What the runtime needs to know of a task, folded from its events on `task.<taskId>`. */
export interface TaskView {
  readonly taskId: string;
  readonly commandId: string;
  readonly conversationId: string;
  readonly userId: string;
  readonly attempt: number;
  readonly status: TaskStatus;
  readonly background: boolean;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly resultState: string;
  readonly outputBytes: number;
  /** How it ended (issue 10.4), once terminal; null before, and for tasks finished before receipts existed. */
  readonly receipt: TaskReceipt | null;
}

/** Folds a task's events (pure). Undefined before `TaskRegistered`. */
export function foldTask(events: readonly TaskEvent[]): TaskView | undefined {
  let v: TaskView | undefined;
  for (const e of events) {
    if (e.type === 'TaskRegistered') {
      const d = e.data;
      v = { taskId: d.taskId, commandId: d.commandId, conversationId: d.conversationId, userId: d.userId, attempt: d.attempt, status: 'starting', background: false, exitCode: null, signal: null, resultState: 'result_pending', outputBytes: 0, receipt: null };
    } else if (!v) continue;
    else if (e.type === 'TaskStarted') v = { ...v, status: v.status === 'starting' ? 'running' : v.status, attempt: e.data.attempt };
    else if (e.type === 'TaskBackgrounded') v = { ...v, background: true };
    else if (e.type === 'TaskStopRequested') v = v.status === 'running' || v.status === 'starting' ? { ...v, status: 'stopping' } : v;
    else if (e.type === 'TaskRetried') v = { ...v, status: 'starting', commandId: e.data.commandId, attempt: e.data.attempt };
    else if (e.type === 'TaskFinished') {
      const d = e.data;
      v = { ...v, status: d.status, attempt: d.attempt, exitCode: d.exitCode, signal: d.signal, resultState: d.resultState, outputBytes: d.outputBytes, receipt: d.receipt ?? null };
    }
  }
  return v;
}

const TOKEN = /^[A-Za-z0-9_-]+$/;

/** Reads a task's whole history; undefined for an unknown id (or one that cannot be a task id). */
export async function readTask(store: EventStore, t: Topology, taskId: string): Promise<TaskView | undefined> {
  if (!TOKEN.test(taskId)) return undefined;
  const { events } = await store.read(t.streams.TASKS, t.task(taskId), decodeTaskEvent);
  return foldTask(events.map((e) => e.event));
}

/** The status of a task from its last event only (one direct get): enough for G4. */
export async function taskStatus(nats: Nats, t: Topology, taskId: string): Promise<TaskStatus | 'unknown'> {
  if (!TOKEN.test(taskId)) return 'unknown';
  const last = await nats.jsm.streams.getMessage(t.streams.TASKS, { last_by_subj: t.task(taskId) });
  if (!last) return 'unknown';
  const e = decodeTaskEvent(last.data);
  switch (e.type) {
    case 'TaskFinished':
      return e.data.status;
    case 'TaskRegistered':
    case 'TaskStartFailed': // TaskFinished{failed} follows it
      return 'starting';
    case 'TaskStopRequested':
    case 'TaskStopSignalled':
      return 'stopping';
    case 'TaskRetried':
      return 'starting';
    case 'TaskStarted':
    case 'TaskBackgrounded':
      return 'running';
  }
}

/**
 * Follows `task.<taskId>` (an ordered consumer from the first event) until `done` holds for the
 * folded task. Undefined when `timeoutMs` passes or `signal` aborts first.
 */
export async function watchTask(
  nats: Nats,
  t: Topology,
  taskId: string,
  done: (v: TaskView) => boolean,
  opts: { timeoutMs: number; signal: AbortSignal },
): Promise<TaskView | undefined> {
  // A string filter (not an array) works on servers before 2.10.
  const consumer = await nats.js.consumers.get(t.streams.TASKS, { filter_subjects: t.task(taskId), deliver_policy: DeliverPolicy.All });
  const iter = await consumer.consume({ max_messages: 64 });
  const stop = () => void iter.close().catch(() => undefined);
  const timer = setTimeout(stop, opts.timeoutMs);
  opts.signal.addEventListener('abort', stop, { once: true });
  const events: TaskEvent[] = [];
  try {
    for await (const m of iter) {
      try {
        events.push(decodeTaskEvent(m.data));
      } catch (e) {
        if (!(e instanceof MalformedEvent)) throw e;
        continue; // an unreadable event cannot change what we wait for
      }
      const v = foldTask(events);
      if (v && done(v)) return v;
    }
    return undefined;
  } finally {
    clearTimeout(timer);
    opts.signal.removeEventListener('abort', stop);
    stop();
  }
}
