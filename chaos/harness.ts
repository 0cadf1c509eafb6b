/**
 * Brings up the chaos suite's private world: its own nats-server and Postgres, certificates, two
 * network namespaces (a runner host to cut off, a runner host to remove), and the five services as
 * separate processes. `teardown()` undoes all of it and is safe to call twice or after a failure.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { topology } from '@handplane/contracts';
import { connectNats, RunnerRegistry } from '@handplane/platform';
import { freePort, makeCerts, Netns, OwnNats, OwnPostgres, reapLeftovers } from './infra';
import { ServiceProcess, type ServiceName } from './services';
import { Client } from './workload';

export interface Timings {
  /** Runner silence after which its tasks are lost: longer than the cut, shorter than the run. */
  readonly runnerLostAfterMs: number;
  readonly reconcileMs: number;
  readonly foregroundMs: number;
}

export interface World {
  readonly base: string;
  readonly logFile: string;
  readonly nats: OwnNats;
  readonly pg: OwnPostgres;
  readonly cutNs: Netns;
  readonly goneNs: Netns;
  readonly gatewayUrl: string;
  readonly services: Map<string, ServiceProcess>;
  readonly timings: Timings;
  /** Runner ids by label. */
  readonly runnerIds: Record<'runner-a' | 'runner-b' | 'runner-c', string>;
  client(user: string, tenant: string): Promise<Client>;
  /** Starts the removable runner (runner-c, in its namespace). */
  startRemovable(): Promise<ServiceProcess>;
  teardown(): Promise<void>;
}

const SECRET = 'chaos-secret';

export async function startWorld(timings: Timings, log: (s: string) => void): Promise<World> {
  reapLeftovers(log);
  const base = mkdtempSync(join(tmpdir(), 'hp-chaos-'));
  // The postgres OS user must reach its data directory below this one.
  chmodSync(base, 0o711);
  const logFile = join(base, 'services.log');
  const tag = String(process.pid);
  const cutNs = new Netns(`hpchaos-cut-${tag}`, '10.251.1.1', '10.251.1.2');
  const goneNs = new Netns(`hpchaos-gone-${tag}`, '10.251.2.1', '10.251.2.2');
  const nats = new OwnNats(join(base, 'nats'), await freePort(), await freePort());
  const pg = new OwnPostgres(join(base, 'pg'), await freePort());
  const services = new Map<string, ServiceProcess>();

  let tornDown = false;
  const teardown = async () => {
    if (tornDown) return;
    tornDown = true;
    // Runners first, in 'stop' mode, so no command outlives the suite; then the rest.
    const order = ['runner-a', 'runner-b', 'runner-c', 'gateway', 'agent-runtime', 'log-ingestor', 'task-coordinator'];
    for (const name of order) await services.get(name)?.stop(8000).catch(() => undefined);
    cutNs.destroy();
    goneNs.destroy();
    await nats.stop().catch(() => undefined);
    try {
      pg.stop('immediate');
    } catch {
      /* not running */
    }
    if (!process.env.CHAOS_KEEP) rmSync(base, { recursive: true, force: true });
    else log(`kept ${base}`);
  };

  try {
    log(`world in ${base}`);
    await nats.start();
    log(`nats-server on ${nats.port} (JetStream in ${nats.dir})`);
    await pg.init();
    log(`postgres on ${pg.port} (fsync on, migrated)`);
    cutNs.create();
    goneNs.create();
    const certs = makeCerts(join(base, 'certs'), [cutNs.nsIp, goneNs.nsIp]);

    const common: Record<string, string> = {
      NATS_URL: nats.url,
      DATABASE_URL: pg.url,
      JWT_SECRET: SECRET,
      LOG_LEVEL: 'warn',
      RATE_LIMIT_PER_MINUTE: '0',
      FOREGROUND_WINDOW_MS: String(timings.foregroundMs),
      RUNNER_LOST_AFTER_MS: String(timings.runnerLostAfterMs),
      RECONCILE_INTERVAL_MS: String(timings.reconcileMs),
      STOP_GRACE_MS: '2000',
      NODE_ENV: 'development',
    };
    const ports: Record<string, number> = {};
    for (const k of ['GATEWAY_PORT', 'RUNTIME_PORT', 'COORDINATOR_PORT', 'INGESTOR_PORT']) ports[k] = await freePort();
    Object.assign(common, Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])));
    // Each service listens on its own port; the unused ones get a free port too so nothing collides.
    const control = (service: ServiceName, port: number, extra: Record<string, string> = {}) =>
      new ServiceProcess({ label: service, service, env: { ...common, RUNNER_HTTP_PORT: '0', RUNNER_PORT: '0', ...extra }, readyUrl: `http://127.0.0.1:${port}/readyz` }, logFile);
    services.set('task-coordinator', control('task-coordinator', ports.COORDINATOR_PORT!, certs.client));
    services.set('log-ingestor', control('log-ingestor', ports.INGESTOR_PORT!, certs.client));
    services.set('agent-runtime', control('agent-runtime', ports.RUNTIME_PORT!));
    services.set('gateway', control('gateway', ports.GATEWAY_PORT!));

    const runnerIds = { 'runner-a': `chaos-a-${tag}`, 'runner-b': `chaos-b-${tag}`, 'runner-c': `chaos-c-${tag}` } as const;
    const runner = async (label: keyof typeof runnerIds, ns: Netns | null) => {
      const httpPort = await freePort();
      const grpcPort = await freePort();
      const host = ns ? ns.nsIp : '127.0.0.1';
      const env = {
        ...common,
        ...certs.runner,
        NATS_URL: ns ? `nats://${ns.hostIp}:${nats.port}` : nats.url,
        RUNNER_ID: runnerIds[label],
        RUNNER_HOST: host,
        RUNNER_PORT: String(grpcPort),
        RUNNER_HTTP_PORT: String(httpPort),
        RUNNER_DATA_DIR: join(base, label),
        RUNNER_ON_SHUTDOWN: 'stop',
      };
      // Inside a namespace the HTTP port is not reachable from here: readiness is the registry record (checked by the caller).
      return new ServiceProcess({ label, service: 'sandbox-runner', env, netns: ns?.name, readyUrl: ns ? undefined : `http://127.0.0.1:${httpPort}/readyz` }, logFile);
    };
    services.set('runner-a', await runner('runner-a', null));
    services.set('runner-b', await runner('runner-b', cutNs));

    for (const name of ['task-coordinator', 'log-ingestor', 'runner-a', 'runner-b', 'agent-runtime', 'gateway']) services.get(name)!.start();
    for (const name of ['task-coordinator', 'log-ingestor', 'runner-a', 'runner-b', 'agent-runtime', 'gateway']) await services.get(name)!.ready(90_000);
    // The namespaced runner's HTTP port is not reachable from here: ready = its registry record is fresh.
    await waitRegistered(nats.url, runnerIds['runner-b'], timings.runnerLostAfterMs, 90_000);
    log('services ready');

    return {
      base,
      logFile,
      nats,
      pg,
      cutNs,
      goneNs,
      gatewayUrl: `http://127.0.0.1:${ports.GATEWAY_PORT}`,
      services,
      timings,
      runnerIds,
      async client(user, tenant) {
        const token = await new SignJWT({ tenant }).setProtectedHeader({ alg: 'HS256' }).setSubject(user).setIssuedAt().setExpirationTime('2h').sign(new TextEncoder().encode(SECRET));
        return new Client(`http://127.0.0.1:${ports.GATEWAY_PORT}`, token, user, tenant);
      },
      async startRemovable() {
        if (!services.has('runner-c')) services.set('runner-c', await runner('runner-c', goneNs));
        const c = services.get('runner-c')!;
        c.start();
        return c;
      },
      teardown,
    };
  } catch (e) {
    await teardown();
    throw e;
  }
}

/** Waits until `runnerId` heart-beats into the registry (a runner whose HTTP port is in a namespace). */
export async function waitRegistered(natsUrl: string, runnerId: string, lostAfterMs: number, timeoutMs: number): Promise<void> {
  const nats = await connectNats(natsUrl, 'chaos-wait');
  try {
    const registry = await RunnerRegistry.open(nats, topology('').runnersBucket);
    const end = Date.now() + timeoutMs;
    while (!(await registry.live(new Date(), lostAfterMs).catch(() => [])).some((r) => r.runnerId === runnerId)) {
      if (Date.now() > end) throw new Error(`runner ${runnerId} never registered (see services.log)`);
      await new Promise((r) => setTimeout(r, 300));
    }
  } finally {
    await nats.nc.close();
  }
}
