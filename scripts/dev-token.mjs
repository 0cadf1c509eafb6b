#!/usr/bin/env node
// Prints a development token (HS256 with JWT_SECRET, default dev secret) for a user and tenant.
//   node scripts/dev-token.mjs <userId> <tenant> [name]
import { createHmac } from 'node:crypto';

const [sub, tenant, name] = process.argv.slice(2);
if (!sub || !tenant) {
  console.error('usage: node scripts/dev-token.mjs <userId> <tenant> [name]');
  process.exit(2);
}
const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
const now = Math.floor(Date.now() / 1000);
const head = b64({ alg: 'HS256', typ: 'JWT' });
const body = b64({ sub, tenant, ...(name ? { name } : {}), iat: now, exp: now + 12 * 3600 });
const sig = createHmac('sha256', process.env.JWT_SECRET ?? 'dev-secret-change-me').update(`${head}.${body}`).digest('base64url');
console.log(`${head}.${body}.${sig}`);
