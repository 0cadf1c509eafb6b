import { intOption, option, parseArgs } from '../args';
import type { Task } from '../api';
import { print, type Context } from '../context';
import { followOutput } from '../follow';
import type { CommandView } from '@handplane/contracts';
import { commandTable, taskDetails, taskTable } from '../format';
import { UsageError } from '../io';

const USAGE = 'usage: handplane tasks ls [--all] [--status S] [--conversation ID] [--user U] [--overdue] [--awaiting] | tasks overdue | tasks show <taskId> | tasks commands <taskId> | tasks logs [-f] <taskId> | tasks stop [--attempt N] <taskId> | tasks stdin [--close] [-n] [--attempt N] <taskId> [data|-]';

/** `handplane tasks …`: the registry, one task, its output, stopping it, input for it. */
export async function tasksCommand(ctx: Context, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'ls':
    case 'list':
      return list(ctx, rest);
    case 'show':
      return show(ctx, rest);
    case 'overdue':
      return overdue(ctx, rest);
    case 'commands':
      return commands(ctx, rest);
    case 'logs':
      return logs(ctx, rest);
    case 'stop':
      return stop(ctx, rest);
    case 'stdin':
      return stdin(ctx, rest);
    default:
      throw new UsageError(USAGE);
  }
}

async function list(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ['all', 'a', 'overdue', 'awaiting'], options: ['status', 'conversation', 'user', 'limit'] });
  if (a.positionals.length) throw new UsageError(USAGE);
  const q = new URLSearchParams();
  const status = option(a, 'status') ?? (a.flags.has('all') || a.flags.has('a') ? undefined : 'active');
  if (status) q.set('status', status);
  const conversation = option(a, 'conversation');
  if (conversation) q.set('conversation', conversation);
  const user = option(a, 'user');
  if (user) q.set('user', user);
  if (a.flags.has('overdue')) q.set('overdue', 'true');
  if (a.flags.has('awaiting')) q.set('awaiting', 'true');
  const limit = intOption(a, 'limit');
  if (limit !== undefined) q.set('limit', String(limit));
  const tasks = await ctx.api().json<Task[]>('GET', `/v1/tasks${q.toString() ? `?${q}` : ''}`);
  print(ctx, tasks, () => (tasks.length === 0 && status === 'active' ? 'no running tasks (--all shows finished ones)\n' : taskTable(tasks)));
  return 0;
}

/** Unfinished tasks past their deadline (plus the gateway's grace), with their count (issue 10.3). */
async function overdue(ctx: Context, argv: string[]): Promise<number> {
  if (argv.length) throw new UsageError(USAGE);
  const r = await ctx.api().json<{ at: string; graceMs: number; count: number; tasks: Task[] }>('GET', '/v1/tasks/overdue');
  print(ctx, r, () => (r.count === 0 ? 'no overdue tasks\n' : `${r.count} overdue task(s) (past their deadline by more than ${r.graceMs} ms)\n${taskTable(r.tasks)}`));
  return 0;
}

const oneTask = (argv: string[], spec: { flags: string[]; options: string[] }) => {
  const a = parseArgs(argv, spec);
  const [taskId, extra] = a.positionals;
  if (!taskId || extra !== undefined) throw new UsageError(USAGE);
  return { a, taskId };
};

async function show(ctx: Context, argv: string[]): Promise<number> {
  const { taskId } = oneTask(argv, { flags: [], options: [] });
  const t = await ctx.api().json<Task>('GET', `/v1/tasks/${encodeURIComponent(taskId)}`);
  print(ctx, t, () => taskDetails(t));
  return 0;
}

/** Every attempt of the task (the `commands` read model): runner, exit, result. */
async function commands(ctx: Context, argv: string[]): Promise<number> {
  const { taskId } = oneTask(argv, { flags: [], options: [] });
  const attempts = await ctx.api().json<CommandView[]>('GET', `/v1/tasks/${encodeURIComponent(taskId)}/commands`);
  print(ctx, attempts, () => commandTable(attempts));
  return 0;
}

/** The output as it is now, or (-f) followed until the task is done and every byte is read. */
async function logs(ctx: Context, argv: string[]): Promise<number> {
  const { a, taskId } = oneTask(argv, { flags: ['f', 'follow'], options: [] });
  const api = ctx.api();
  if (a.flags.has('f') || a.flags.has('follow')) {
    const { task, complete } = await followOutput(api, taskId, { write: (b) => ctx.io.out(b), progress: (t) => ctx.note(t), progressEveryMs: ctx.progressEveryMs });
    if (!complete) ctx.note(`the output of task ${taskId} is incomplete (result ${task.resultState})`);
    return 0;
  }
  let offset = 0;
  for (;;) {
    const slice = await api.output(taskId, offset);
    if (slice.bytes.length === 0) return 0;
    ctx.io.out(slice.bytes);
    offset = slice.nextOffset;
  }
}

async function stop(ctx: Context, argv: string[]): Promise<number> {
  const { a, taskId } = oneTask(argv, { flags: [], options: ['attempt'] });
  const attempt = intOption(a, 'attempt');
  const r = await ctx.api().json<{ status: string; attempt: number }>('POST', `/v1/tasks/${encodeURIComponent(taskId)}/stop`, attempt === undefined ? {} : { attempt });
  print(ctx, { taskId, ...r }, () => `task ${taskId} (attempt ${r.attempt}): ${r.status}\n`);
  return 0;
}

/** Bytes per POST: the API's limit per write. */
const STDIN_CHUNK = 64 * 1024;

interface StdinWritten {
  taskId: string;
  attempt: number;
  bytes: number;
  closed: boolean;
  totalBytes: number;
}

/**
 * `tasks stdin <taskId> [data|-]`: input for a running task. `data` is sent with a newline (`-n`: without
 * one), `-` sends this process's stdin as bytes, in writes of at most 64 KiB, in order; `--close` then
 * closes the task's stdin (alone, it only closes it).
 */
async function stdin(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ['close', 'n'], options: ['attempt'] });
  const [taskId, data, extra] = a.positionals;
  const close = a.flags.has('close');
  if (!taskId || extra !== undefined || (data === undefined && !close)) throw new UsageError(USAGE);
  const attempt = intOption(a, 'attempt');
  let bytes: Buffer;
  if (data === '-') {
    const parts: Buffer[] = [];
    for await (const chunk of ctx.io.stdin) parts.push(Buffer.from(chunk as Buffer | string));
    bytes = Buffer.concat(parts);
  } else bytes = Buffer.from(data === undefined ? '' : a.flags.has('n') ? data : `${data}\n`, 'utf8');
  const api = ctx.api();
  const path = `/v1/tasks/${encodeURIComponent(taskId)}/stdin`;
  let last: StdinWritten | undefined;
  for (let at = 0; at < bytes.length || last === undefined; at += STDIN_CHUNK) {
    const piece = bytes.subarray(at, at + STDIN_CHUNK);
    const final = at + STDIN_CHUNK >= bytes.length;
    last = await api.json<StdinWritten>('POST', path, { data: piece.toString('base64'), encoding: 'base64', close: close && final, ...(attempt === undefined ? {} : { attempt }) });
  }
  const r = last;
  print(ctx, r, () => `task ${taskId} (attempt ${r.attempt}): ${bytes.length} byte(s) written${r.closed ? ', stdin closed' : ''}\n`);
  return 0;
}
