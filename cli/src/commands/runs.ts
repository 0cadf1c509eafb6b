import { intOption, parseArgs } from '../args';
import { print, type Context } from '../context';
import type { RunView } from '@handplane/contracts';
import { runTable } from '../format';
import { UsageError } from '../io';

const USAGE = 'usage: handplane runs <conversation> [--after SEQ]';

/** `handplane runs <conversation>`: every run of the agent, oldest first (all pages). */
export async function runsCommand(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: [], options: ['after'] });
  const [conversationId, extra] = a.positionals;
  if (!conversationId || extra !== undefined) throw new UsageError(USAGE);
  const api = ctx.api();
  const runs: RunView[] = [];
  let after = intOption(a, 'after') ?? 0;
  for (;;) {
    const { body, headers } = await api.jsonWithHeaders<RunView[]>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}/runs?after=${after}&limit=1000`);
    runs.push(...body);
    const next = headers.get('x-next-after');
    if (!next || body.length === 0) break;
    after = Number(next);
  }
  print(ctx, runs, () => runTable(runs));
  return 0;
}
