import { intOption, parseArgs } from '../args';
import { print, type Context } from '../context';
import { summarize } from '../format';
import { UsageError } from '../io';

/** `handplane stop-all <conversation>`: ends its epoch, stopping every task and the active run. */
export async function stopAllCommand(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: [], options: ['epoch'] });
  const [conversationId, extra] = a.positionals;
  if (!conversationId || extra !== undefined) throw new UsageError('usage: handplane stop-all <conversation> [--epoch N]');
  const epoch = intOption(a, 'epoch');
  const r = await ctx.api().json<{ epoch: number; stopping: string[] }>('POST', `/v1/conversations/${encodeURIComponent(conversationId)}/stop-all`, epoch === undefined ? {} : { epoch });
  print(ctx, r, () => `conversation ${conversationId} is now in epoch ${r.epoch}; ${r.stopping.length ? `stopping ${r.stopping.join(', ')}` : 'nothing was running'}\n`);
  return 0;
}

interface AuditEntry {
  source?: 'conversation' | 'task';
  seq: number;
  time: string;
  type: string;
  actor: string | null;
  data: Record<string, unknown>;
}

/** `handplane audit <conversation> [--tasks]`: the whole log, in order (every page); `--tasks` merges in the task events. */
export async function auditCommand(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ['tasks'], options: ['after'] });
  const [conversationId, extra] = a.positionals;
  if (!conversationId || extra !== undefined) throw new UsageError('usage: handplane audit <conversation> [--tasks] [--after SEQ]');
  const include = a.flags.has('tasks') ? '&include=tasks' : '';
  const api = ctx.api();
  const entries: AuditEntry[] = [];
  let after = intOption(a, 'after') ?? 0;
  for (;;) {
    const { body, headers } = await api.jsonWithHeaders<AuditEntry[]>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}/audit?after=${after}${include}`);
    entries.push(...body);
    const next = headers.get('x-next-after');
    if (!next || body.length === 0) break;
    after = Number(next);
  }
  print(ctx, entries, () => entries.map((e) => `${e.source === 'task' ? 'T' : ' '}${String(e.seq).padStart(6)}  ${e.time}  ${(e.actor ?? '-').padEnd(12)}  ${e.type.padEnd(20)}  ${summarize(e.type, e.data ?? {})}\n`).join(''));
  return 0;
}
