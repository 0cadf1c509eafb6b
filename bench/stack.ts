// The real stack for the bench: each of the five services in its own process (started from its
// sources exactly as `main.ts` runs in production, through scripts/ts-register.js), on the machine's
// NATS under a unique prefix and a fresh database. The bench process only measures: its client work
// never shares an event loop with a service, and each service's memory is its own.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import type { Pool } from 'pg';
import { createPool } from '@handplane/platform';
import { freePort, freshDatabase, NATS_URL, prepareTemplateDatabase, testNats, waitFor } from '@handplane/testing';

const ROOT = join(__dirname, '..');
const SECRET = 'bench-secret';
export const SERVICES = ['sandbox-runner', 'task-coordinator', 'log-ingestor', 'agent-runtime', 'gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];
const PORT_VAR: Record<ServiceName, string> = {
  'sandbox-runner': 'RUNNER_HTTP_PORT',
  'task-coordinator': 'COORDINATOR_PORT',
  'log-ingestor': 'INGESTOR_PORT',
  'agent-runtime': 'RUNTIME_PORT',
  gateway: 'GATEWAY_PORT',
};

const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

export async function startBenchStack(env: Record<string, string> = {}) {
  await prepareTemplateDatabase();
  const nats = await testNats('bench');
  const db = await freshDatabase('bench');
  const dataDir = await mkdtemp(join(tmpdir(), 'hp-bench-'));
  const ports: Record<string, string> = { RUNNER_PORT: String(await freePort()) };
  for (const s of SERVICES) ports[PORT_VAR[s]] = String(await freePort());
  const vars: Record<string, string> = {
    NATS_URL,
    NATS_PREFIX: nats.prefix,
    DATABASE_URL: db.url,
    RUNNER_HOST: '127.0.0.1',
    RUNNER_DATA_DIR: dataDir,
    RUNNER_ON_SHUTDOWN: 'stop',
    // The crash figure puts 1,000 tasks in flight on the one runner.
    RUNNER_CAPACITY: '2000',
    JWT_SECRET: SECRET,
    // The bench is one user sending thousands of requests: the per-user budget would measure itself.
    RATE_LIMIT_PER_MINUTE: '0',
    STOP_GRACE_MS: '2000',
    LOG_LEVEL: 'warn',
    ...ports,
    ...env,
  };
  const children = new Map<ServiceName, ChildProcess>();
  const logs = new Map<ServiceName, string[]>();
  const pool: Pool = createPool(db.url, 4);

  const start = async (name: ServiceName): Promise<ChildProcess> => {
    const code = `require('./scripts/ts-register.js').register(); require('./services/${name}/src/main.ts');`;
    const c = spawn(process.execPath, ['-e', code], { cwd: ROOT, env: { ...process.env, ...vars }, stdio: ['ignore', 'pipe', 'pipe'] });
    const own = logs.get(name) ?? [];
    logs.set(name, own);
    const keep = (d: Buffer) => {
      own.push(...d.toString().split('\n').filter(Boolean).map((l) => `${name}: ${l.slice(0, 2000)}`));
      if (own.length > 100) own.splice(0, own.length - 100);
    };
    c.stdout!.on('data', keep);
    c.stderr!.on('data', keep);
    children.set(name, c);
    const url = `http://127.0.0.1:${vars[PORT_VAR[name]]}/readyz`;
    // Not waitFor: it retries a probe that throws, and a service that exited will not come back.
    const until = Date.now() + 120_000;
    while ((await fetch(url).catch(() => null))?.status !== 200) {
      if (exited(c)) throw new Error(`${name} exited:\n${own.slice(-30).join('\n')}`);
      if (Date.now() > until) throw new Error(`${name} not ready after 120 s:\n${own.slice(-30).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return c;
  };

  const stopChild = async (c: ChildProcess | undefined) => {
    if (!c || exited(c)) return;
    c.kill('SIGTERM');
    await waitFor(() => exited(c), 20_000, 'a service to stop').catch(() => c.kill('SIGKILL'));
  };

  const stop = async () => {
    for (const name of [...SERVICES].reverse()) await stopChild(children.get(name));
    await pool.end();
    await nats.close();
    await db.drop();
    await rm(dataDir, { recursive: true, force: true });
  };

  try {
    // The runner first: the gateway is ready only once a live runner is registered.
    await start('sandbox-runner');
    await Promise.all(SERVICES.filter((s) => s !== 'sandbox-runner').map(start));
  } catch (e) {
    await stop();
    throw e;
  }

  return {
    baseUrl: `http://127.0.0.1:${vars.GATEWAY_PORT}`,
    nats: nats.nats,
    topology: nats.topology,
    pool,
    vars,
    /** pid of a service's process (the node process itself: `node -e`). */
    pid: (name: ServiceName) => children.get(name)!.pid!,
    token: (userId = 'bench-user', tenant = 'bench') =>
      new SignJWT({ tenant }).setProtectedHeader({ alg: 'HS256' }).setSubject(userId).setIssuedAt().setExpirationTime('2h').sign(new TextEncoder().encode(SECRET)),
    /** SIGKILLs a service and waits until it is gone. */
    async kill(name: ServiceName) {
      const c = children.get(name)!;
      c.kill('SIGKILL');
      await waitFor(() => exited(c), 10_000, `${name} to die`);
    },
    /** Starts a service again (after `kill`); resolves once it answers /readyz. */
    restart: (name: ServiceName) => start(name),
    /** Services whose process has exited (a crash the bench did not cause). */
    dead: () => [...children].filter(([, c]) => exited(c)).map(([name]) => name),
    /** The last lines each service printed (warnings and errors at the bench's LOG_LEVEL). */
    logs: () => [...logs.values()].map((l) => l.slice(-12).join('\n')).join('\n'),
    stop,
  };
}

export type BenchStack = Awaited<ReturnType<typeof startBenchStack>>;
