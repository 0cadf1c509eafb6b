import { intOption, option, parseArgs } from '../args';
import type { Task } from '../api';
import { print, type Context } from '../context';
import { followOutput } from '../follow';
import { taskTable } from '../format';
import { UsageError } from '../io';

const USAGE = 'usage: handplane tasks ls [--all] [--status S] [--conversation ID] | tasks show <taskId> | tasks logs [-f] <taskId> | tasks stop [--attempt N] <taskId>';

/** `handplane tasks …`: the registry, one task, its output, stopping it. */
export async function tasksCommand(ctx: Context, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'ls':
    case 'list':
      return list(ctx, rest);
    case 'show':
      return show(ctx, rest);
    case 'logs':
      return logs(ctx, rest);
    case 'stop':
      return stop(ctx, rest);
    default:
      throw new UsageError(USAGE);
  }
}

async function list(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ['all', 'a'], options: ['status', 'conversation', 'limit'] });
  if (a.positionals.length) throw new UsageError(USAGE);
  const q = new URLSearchParams();
  const status = option(a, 'status') ?? (a.flags.has('all') || a.flags.has('a') ? undefined : 'active');
  if (status) q.set('status', status);
  const conversation = option(a, 'conversation');
  if (conversation) q.set('conversation', conversation);
  const limit = intOption(a, 'limit');
  if (limit !== undefined) q.set('limit', String(limit));
  const tasks = await ctx.api().json<Task[]>('GET', `/v1/tasks${q.toString() ? `?${q}` : ''}`);
  print(ctx, tasks, () => (tasks.length === 0 && status === 'active' ? 'no running tasks (--all shows finished ones)\n' : taskTable(tasks)));
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
  print(ctx, t, () => `${Object.entries(t).map(([k, v]) => `${k.padEnd(15)} ${v === null ? '-' : String(v)}`).join('\n')}\n`);
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
