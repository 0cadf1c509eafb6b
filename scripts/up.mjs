#!/usr/bin/env node
// `npm run up`: brings the whole system up on this machine. Installs dependencies, makes sure NATS
// (JetStream) and Postgres are reachable (starting or installing them if needed), migrates, builds,
// starts the five services and prints the URLs. Ctrl-C stops the services (not NATS/Postgres).
//   --no-install  skip the dependency check      --no-build  use the existing build
//   --replicas N  (or REPLICAS=N) runs N instances of each control-plane service (gateway,
//                 agent-runtime, task-coordinator, log-ingestor; one runner per host): instance k > 1
//                 listens on <PORT>_<k> when set, else on <PORT> + 100 * (k - 1)
// Every setting of DESIGN.md §10 can be overridden through the environment.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { ensureDependencies, log, root, run } from './lib.mjs';

const argv = process.argv.slice(2);
const args = new Set(argv);
const replicasAt = argv.indexOf('--replicas');
const replicas = Number(replicasAt >= 0 ? argv[replicasAt + 1] : (process.env.REPLICAS ?? 1));
if (!Number.isInteger(replicas) || replicas < 1 || replicas > 9) {
  console.error(`--replicas / REPLICAS must be an integer from 1 to 9 (got ${replicasAt >= 0 ? argv[replicasAt + 1] : process.env.REPLICAS})`);
  process.exit(2);
}
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
const portVar = { gateway: 'GATEWAY_PORT', 'agent-runtime': 'RUNTIME_PORT', 'task-coordinator': 'COORDINATOR_PORT', 'log-ingestor': 'INGESTOR_PORT' };
const defaultPort = { GATEWAY_PORT: 8080, RUNTIME_PORT: 8081, COORDINATOR_PORT: 8082, INGESTOR_PORT: 8083 };
const children = new Map();
let stopping = false;

/** Instance k (1-based) of a service: its own HTTP port from k = 2 on. */
function envOf(name, k) {
  const v = portVar[name];
  if (k === 1 || !v) return env;
  const port = env[`${v}_${k}`] ?? String(Number(env[v] ?? defaultPort[v]) + 100 * (k - 1));
  return { ...env, [v]: port };
}

function start(name, k = 1) {
  const id = k === 1 ? name : `${name}#${k}`;
  const child = spawn(process.execPath, [join(root, 'services', name, 'dist', 'main.js')], { env: envOf(name, k), cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `${id.padEnd(16)}|`;
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
    children.delete(id);
    if (stopping) return;
    log(`${id} exited (${code ?? signal}); stopping everything`);
    shutdown(1);
  });
  children.set(id, child);
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

for (const s of services) for (let k = 1; k <= (portVar[s] ? replicas : 1); k++) start(s, k);
if (replicas > 1) log(`${replicas} instances of each control-plane service`);

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
