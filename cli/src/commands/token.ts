import { createHmac } from 'node:crypto';
import { intOption, option, parseArgs } from '../args';
import { print, type Context } from '../context';
import { UsageError } from '../io';

/** The development secret of DESIGN.md §10 (the gateway refuses it in production). */
const DEV_SECRET = 'dev-secret-change-me';

const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');

/** Signs an HS256 token with `sub`, `tenant`, optional `name`, `iat` and `exp`, as the gateway expects. */
export function signToken(claims: { sub: string; tenant: string; name?: string }, secret: string, ttlSeconds: number, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const head = b64({ alg: 'HS256', typ: 'JWT' });
  const body = b64({ sub: claims.sub, tenant: claims.tenant, ...(claims.name ? { name: claims.name } : {}), iat: nowSeconds, exp: nowSeconds + ttlSeconds });
  const sig = createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url');
  return `${head}.${body}.${sig}`;
}

const CLAIM = /^[^\s\0]{1,200}$/;

/** `handplane token <user> <tenant> [--name N] [--ttl seconds] [--secret S]`: a development token. */
export async function tokenCommand(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: [], options: ['name', 'ttl', 'secret'] });
  const [sub, tenant, extra] = a.positionals;
  if (!sub || !tenant || extra !== undefined) throw new UsageError('usage: handplane token <user> <tenant> [--name NAME] [--ttl SECONDS] [--secret SECRET]');
  if (!CLAIM.test(sub) || !CLAIM.test(tenant)) throw new UsageError('user and tenant are 1 to 200 characters without spaces');
  const ttl = intOption(a, 'ttl') ?? 12 * 3600;
  if (ttl < 1) throw new UsageError('--ttl must be at least 1 second');
  // Never printed: the secret comes from the option or the environment the gateway also reads.
  const secret = option(a, 'secret') ?? ctx.io.env.HANDPLANE_JWT_SECRET ?? ctx.io.env.JWT_SECRET ?? DEV_SECRET;
  const now = Math.floor(Date.now() / 1000);
  const name = option(a, 'name');
  const token = signToken({ sub, tenant, ...(name ? { name } : {}) }, secret, ttl, now);
  print(ctx, { token, expiresAt: new Date((now + ttl) * 1000).toISOString() }, () => `${token}\n`);
  return 0;
}
