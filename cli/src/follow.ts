import { constants } from 'node:os';
import { TERMINAL, type Api, type Task } from './api';

/** What following a task ended with. */
export interface Followed {
  task: Task;
  /** Every byte was read (the result is readable and the end reached). */
  complete: boolean;
}

export interface FollowOptions {
  /** Receives output bytes as they become durable, in order. */
  readonly write: (bytes: Uint8Array) => void;
  /** Progress lines for long waits. */
  readonly progress: (text: string) => void;
  /** How long without news before a progress line (and between them). */
  readonly progressEveryMs: number;
  readonly signal?: AbortSignal;
  /** After the task ended, how long to wait for its output to be settled before giving up. */
  readonly settleMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Reads a task's output from offset 0 until all of it is there (the Command Log is the source of
 * truth, byte-exact), polling with a backoff and checking the task now and then. Ends early when
 * the task ended and its result is `unavailable` (the durable prefix is all there is) or never
 * settles within `settleMs`.
 */
export async function followOutput(api: Api, taskId: string, o: FollowOptions): Promise<Followed> {
  let offset = 0;
  let delay = 50;
  let quietSince = Date.now();
  let lastProgress = Date.now();
  let task = await api.json<Task>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`);
  let endedAt: number | undefined;
  for (;;) {
    const slice = await api.output(taskId, offset);
    if (slice.bytes.length > 0) {
      o.write(slice.bytes);
      offset = slice.nextOffset;
      delay = 50;
      quietSince = lastProgress = Date.now();
      continue; // there may be more right away
    }
    if (slice.complete) return { task: await settledTask(api, taskId), complete: true };
    task = await api.json<Task>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`);
    if (TERMINAL.has(task.status)) {
      endedAt ??= Date.now();
      if (slice.resultState === 'unavailable' || Date.now() - endedAt > (o.settleMs ?? 60_000)) return { task, complete: false };
    }
    if (o.signal?.aborted) return { task, complete: false };
    const now = Date.now();
    if (now - lastProgress >= o.progressEveryMs) {
      lastProgress = now;
      o.progress(`task ${taskId} is ${task.status}${task.background ? ' in the background' : ''}; ${Math.round((now - quietSince) / 1000)} s without new output`);
    }
    await sleep(delay);
    delay = Math.min(1000, delay * 2);
  }
}

/** The read model may show the task's end a moment after its output: wait for it briefly. */
async function settledTask(api: Api, taskId: string): Promise<Task> {
  for (let i = 0; ; i++) {
    const task = await api.json<Task>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`);
    if (TERMINAL.has(task.status) || i >= 100) return task;
    await sleep(100);
  }
}

/**
 * The process exit code that stands for a finished task, as a shell would report it: the command's
 * own code; 128 + signal number when a signal ended it; 124 when it timed out (like `timeout`);
 * 130 when it was stopped (like Ctrl-C); 1 when it failed without a code; 255 when it was lost.
 */
export function exitCodeOf(task: Task): number {
  if (task.exitCode !== null && (task.status === 'succeeded' || task.status === 'failed')) return task.exitCode;
  switch (task.status) {
    case 'succeeded':
      return 0;
    case 'timed_out':
      return 124;
    case 'cancelled':
      return 130;
    case 'lost':
      return 255;
    default: {
      const n = task.signal ? (constants.signals as Record<string, number>)[task.signal] : undefined;
      return n ? 128 + n : 1;
    }
  }
}
