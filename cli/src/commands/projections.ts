import { PROJECTION_NAMES } from '@handplane/contracts';
import { Api } from '../api';
import { intOption, option, parseArgs } from '../args';
import { print, type Context } from '../context';
import { UsageError } from '../io';

interface ProjectionStatus {
  name: string;
  stream: string;
  position: number;
  rows: number;
  rebuild: { status: string; seq: number; rows: number; startedAt: string; finishedAt: string | null; seconds: number | null; error: string | null } | null;
}

const USAGE = 'usage: handplane projections ls | rebuild [name…] [--admin-token T] [--timeout-ms N]';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function adminApi(ctx: Context, token: string | undefined): Api {
  const t = token ?? ctx.io.env.HANDPLANE_ADMIN_TOKEN;
  if (!t) throw new UsageError('projections are an operator action: set HANDPLANE_ADMIN_TOKEN (the gateway\'s ADMIN_TOKEN) or pass --admin-token');
  return new Api(ctx.url, t, ctx.note);
}

function table(rows: ProjectionStatus[]): string {
  const lines = [['NAME', 'STREAM', 'POSITION', 'ROWS', 'LAST REBUILD']];
  for (const r of rows) {
    const b = r.rebuild;
    const last = !b ? '-' : b.status === 'done' ? `done ${b.finishedAt} (${b.seconds?.toFixed(2)} s)` : b.status === 'failed' ? `failed: ${b.error}` : `running (at ${b.seq})`;
    lines.push([r.name, r.stream, String(r.position), String(r.rows), last]);
  }
  const widths = lines[0]!.map((_, i) => Math.max(...lines.map((l) => l[i]!.length)));
  return lines.map((l) => l.map((c, i) => (i === l.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

/**
 * `handplane projections ls | rebuild [name…]`: the read models, and rebuilding them from sequence 1
 * while the system serves (all of them when no name is given). Uses the gateway's operator API.
 */
export async function projectionsCommand(ctx: Context, argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const a = parseArgs(rest, { flags: [], options: ['admin-token', 'timeout-ms'] });
  if (sub === 'ls') {
    if (a.positionals.length) throw new UsageError(USAGE);
    const rows = await adminApi(ctx, option(a, 'admin-token')).json<ProjectionStatus[]>('GET', '/v1/admin/projections');
    print(ctx, rows, () => table(rows));
    return 0;
  }
  if (sub !== 'rebuild') throw new UsageError(USAGE);
  const unknown = a.positionals.filter((n) => !PROJECTION_NAMES.includes(n));
  if (unknown.length) throw new UsageError(`unknown projection ${unknown.map((n) => JSON.stringify(n)).join(', ')}; valid names: ${PROJECTION_NAMES.join(', ')}`);
  const names = a.positionals.length ? a.positionals : [...PROJECTION_NAMES];
  const api = adminApi(ctx, option(a, 'admin-token'));
  const timeoutMs = intOption(a, 'timeout-ms') ?? 3_600_000;
  const done: ProjectionStatus[] = [];
  for (const name of names) {
    const path = `/v1/admin/projections/${encodeURIComponent(name)}`;
    await api.json('POST', `${path}/rebuild`);
    ctx.note(`rebuilding ${name}…`);
    const until = Date.now() + timeoutMs;
    let s = await api.json<ProjectionStatus>('GET', path);
    while (s.rebuild?.status === 'running') {
      if (Date.now() > until) throw new Error(`the rebuild of ${name} is still running after ${timeoutMs} ms (it goes on; see handplane projections ls)`);
      await sleep(250);
      s = await api.json<ProjectionStatus>('GET', path);
    }
    if (s.rebuild?.status !== 'done') throw new Error(`the rebuild of ${name} failed: ${s.rebuild?.error ?? 'unknown error'}`);
    done.push(s);
    if (!ctx.json) {
      const b = s.rebuild;
      const rate = b.seconds ? Math.round(b.rows / b.seconds) : 0;
      ctx.io.out(`rebuilt ${name}: ${b.rows} rows in ${(b.seconds ?? 0).toFixed(2)} s (${rate} rows/s), position ${s.position}\n`);
    }
  }
  if (ctx.json) ctx.io.out(`${JSON.stringify(done, null, 2)}\n`);
  return 0;
}
