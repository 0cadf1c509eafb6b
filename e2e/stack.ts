import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { topology } from '@handplane/contracts';
import { connectNats, deleteStreams } from '@handplane/platform';
import { freePort, freshDatabase, NATS_URL, uniquePrefix, waitFor } from '@handplane/testing';

const ROOT = join(__dirname, '..');

/** The whole system, started with `scripts/up.mjs` as a user starts it, isolated by prefix and database. */
export interface Stack {
  readonly baseUrl: string;
  /** Every gateway instance (one unless started with `replicas`). */
  readonly baseUrls: readonly string[];
  readonly prefix: string;
  readonly databaseUrl: string;
  readonly logs: string[];
  token(userId: string, tenant: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startStack(env: Record<string, string> = {}, opts: { replicas?: number } = {}): Promise<Stack> {
  const replicas = opts.replicas ?? 1;
  const prefix = uniquePrefix('e2e');
  const db = await freshDatabase('e2e');
  const dataDir = mkdtempSync(join(tmpdir(), 'hp-e2e-runner-'));
  const ports: Record<string, number> = { GATEWAY_PORT: await freePort(), RUNTIME_PORT: await freePort(), COORDINATOR_PORT: await freePort(), INGESTOR_PORT: await freePort(), RUNNER_HTTP_PORT: await freePort(), RUNNER_PORT: await freePort() };
  for (let k = 2; k <= replicas; k++) for (const v of ['GATEWAY_PORT', 'RUNTIME_PORT', 'COORDINATOR_PORT', 'INGESTOR_PORT']) ports[`${v}_${k}`] = await freePort();
  const secret = 'e2e-secret';
  const childEnv = {
    ...process.env,
    NATS_URL,
    NATS_PREFIX: prefix,
    DATABASE_URL: db.url,
    RUNNER_DATA_DIR: dataDir,
    JWT_SECRET: secret,
    LOG_LEVEL: 'warn',
    // A stopped test stack must not leave commands running for a runner that never comes back.
    RUNNER_ON_SHUTDOWN: 'stop',
    REPLICAS: String(replicas),
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    ...env,
  };
  const logs: string[] = [];
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, 'scripts', 'up.mjs'), '--no-install', '--no-build'], { env: childEnv, cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  for (const s of [child.stdout!, child.stderr!]) s.on('data', (d: Buffer) => logs.push(...d.toString().split('\n').filter(Boolean)));
  let exited = false;
  child.on('exit', () => (exited = true));
  const baseUrl = `http://127.0.0.1:${ports.GATEWAY_PORT}`;
  const baseUrls = [baseUrl, ...Array.from({ length: replicas - 1 }, (_, i) => `http://127.0.0.1:${ports[`GATEWAY_PORT_${i + 2}`]}`)];
  const readyUrls = Object.entries(ports)
    .filter(([name]) => name !== 'RUNNER_PORT')
    .map(([, port]) => `http://127.0.0.1:${port}`);
  const stop = async () => {
    if (!exited) {
      child.kill('SIGTERM');
      await waitFor(() => exited, 20_000, 'the stack to stop').catch(() => {
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          /* gone */
        }
      });
    }
    const nats = await connectNats(NATS_URL, 'e2e-cleanup');
    await deleteStreams(nats.jsm, topology(prefix));
    await nats.jsm.streams.delete(`KV_${topology(prefix).runnersBucket}`).catch(() => undefined);
    await nats.nc.drain();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`the stack exited:\n${logs.slice(-40).join('\n')}`);
        // Every service of every replica, not only the gateways: a test that starts a command at once
        // must not meet a coordinator that is still starting (no responders: 503).
        const ready = await Promise.all(readyUrls.map((u) => fetch(`${u}/readyz`).then((r) => r.status === 200).catch(() => false)));
        return ready.every(Boolean);
      },
      // Every instance starts at once: on a loaded 2-core machine that takes a while.
      60_000 * replicas,
      'every service to be ready',
      200,
    );
  } catch (e) {
    await stop();
    throw new Error(`${(e as Error).message}\n--- stack logs ---\n${logs.slice(-60).join('\n')}`);
  }
  return {
    baseUrl,
    baseUrls,
    prefix,
    databaseUrl: db.url,
    logs,
    token: (userId, tenant) =>
      new SignJWT({ tenant }).setProtectedHeader({ alg: 'HS256' }).setSubject(userId).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(secret)),
    stop,
  };
}
