#!/usr/bin/env node
// `npm run up`: brings the whole system up on this machine. Installs dependencies, makes sure NATS
// (JetStream) and Postgres are reachable (starting or installing them if needed), migrates, builds,
// starts the five services and prints the URLs. Ctrl-C stops the services (not NATS/Postgres).
//   --no-install  skip the dependency check      --no-build  use the existing build
// Every setting of DESIGN.md §10 can be overridden through the environment.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ensureDependencies, log, root, run } from './lib.mjs';

const args = new Set(process.argv.slice(2));
if (!args.has('--no-install')) ensureDependencies();
const { ensureInfra } = await import('./infra.mjs');
await ensureInfra();
if (!args.has('--no-build')) {
  log('building');
  run('npx', ['tsc', '-b', 'tsconfig.build.json']);
}

const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/handplane',
  RUNNER_DATA_DIR: process.env.RUNNER_DATA_DIR ?? join(root, '.data', 'runner'),
};
mkdirSync(env.RUNNER_DATA_DIR, { recursive: true });
const require = createRequire(import.meta.url);
const { migrate } = require(join(root, 'libs/platform/dist/index.js'));
const applied = await migrate(env.DATABASE_URL);
log(applied.length ? `migrated: ${applied.join(', ')}` : 'database schema is current');

const services = ['sandbox-runner', 'task-coordinator', 'log-ingestor', 'agent-runtime', 'gateway'];
const children = new Map();
let stopping = false;

function start(name) {
  const child = spawn(process.execPath, [join(root, 'services', name, 'dist', 'main.js')], { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `${name.padEnd(16)}|`;
  for (const s of [child.stdout, child.stderr]) {
    let buf = '';
    s.on('data', (d) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        process.stdout.write(`${prefix} ${buf.slice(0, i)}\n`);
        buf = buf.slice(i + 1);
      }
    });
  }
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (stopping) return;
    log(`${name} exited (${code ?? signal}); stopping everything`);
    shutdown(1);
  });
  children.set(name, child);
}

function shutdown(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const c of children.values()) c.kill('SIGTERM');
  const force = setTimeout(() => {
    for (const c of children.values()) c.kill('SIGKILL');
  }, 10_000);
  const wait = setInterval(() => {
    if (children.size === 0) {
      clearInterval(wait);
      clearTimeout(force);
      process.exit(code);
    }
  }, 100);
}
process.on('SIGINT', () => shutdown(0));
process.on('SIGTERM', () => shutdown(0));

for (const s of services) start(s);

const gatewayPort = Number(env.GATEWAY_PORT ?? 8080);
const base = `http://127.0.0.1:${gatewayPort}`;
for (let i = 0; i < 240 && !stopping; i++) {
  try {
    const r = await fetch(`${base}/readyz`);
    if (r.status === 200) {
      log(`ready: API ${base}/v1  health ${base}/readyz`);
      log(`get a development token: node scripts/dev-token.mjs <user> <tenant>`);
      break;
    }
  } catch {
    /* not listening yet */
  }
  await new Promise((r) => setTimeout(r, 250));
}
