import { loadConfig } from '@handplane/contracts';
import { createLogger } from '@handplane/platform';
import type { Pool } from 'pg';
import { Pool as PgPool } from 'pg';
import { startRuntime } from '../../services/agent-runtime/src/service';
import { signDevToken } from '../../services/gateway/src/app/dev-token';
import { startGateway } from '../../services/gateway/src/service';
import { startIngestor } from '../../services/log-ingestor/src/service';
import { startRunner } from '../../services/sandbox-runner/src/service';
import { startCoordinator } from '../../services/task-coordinator/src/service';
import { EPHEMERAL_SERVICE_PORTS, IN_PROCESS_RUNNER, stackResources, testLogLevel as level } from '../stack-common';

const SECRET = 'telemetry-test-secret';
export const METRICS_TOKEN = 'metrics-test-token';

/** The five services in-process on the real NATS (own prefix) and Postgres (own database). */
export async function startTelemetryStack(label: string, env: Record<string, string> = {}) {
  const resources = await stackResources(label);
  const { nats, db, dataDir } = resources;
  const vars: Record<string, string> = {
    ...resources.vars,
    ...EPHEMERAL_SERVICE_PORTS,
    ...IN_PROCESS_RUNNER,
    JWT_SECRET: SECRET,
    TASK_DEADLINE_MS: '120000',
    LOG_LEVEL: level(),
    ...env,
  };
  const config = loadConfig(vars);
  const log = (name: string) => createLogger(name, level());
  const stops: (() => Promise<unknown>)[] = [];
  const pool: Pool = new PgPool({ connectionString: db.url, max: 2 });
  pool.on('error', () => undefined);
  const stop = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
    await pool.end();
    await resources.release();
  };
  try {
    const runner = await startRunner(config, { dataDir, env: vars, heartbeatMs: 500, logger: log('sandbox-runner') });
    stops.push(() => runner.stop());
    const coordinator = await startCoordinator(config, { logger: log('task-coordinator'), stopSweepMs: 200 });
    stops.push(() => coordinator.stop());
    const ingestor = await startIngestor(config, { logger: log('log-ingestor'), claimIntervalMs: 100 });
    stops.push(() => ingestor.stop());
    const runtime = await startRuntime(config, { logger: log('agent-runtime'), sweepMs: 500 });
    stops.push(() => runtime.stop());
    const gateway = await startGateway(config, { logger: log('gateway'), host: '127.0.0.1', metricsToken: METRICS_TOKEN });
    stops.push(() => gateway.stop());
    const ports = { gateway: gateway.httpPort, coordinator: coordinator.httpPort, ingestor: ingestor.httpPort, runtime: runtime.httpPort, runner: runner.httpPort };
    const baseUrl = `http://127.0.0.1:${gateway.httpPort}`;
    /** Calls the gateway API as alice@acme. */
    const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
      const token = await signDevToken({ sub: 'alice', tenant: 'acme' }, SECRET, 600);
      const r = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await r.text();
      return { status: r.status, json: text ? JSON.parse(text) : undefined };
    };
    return { vars, nats, pool, ports, baseUrl, api, stop, prefix: nats.prefix };
  } catch (e) {
    await stop();
    throw e;
  }
}

export type TelemetryStack = Awaited<ReturnType<typeof startTelemetryStack>>;

/** Reads `/metrics` of a service on 127.0.0.1. */
export async function scrape(port: number, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string; body: string }> {
  const r = await fetch(`http://127.0.0.1:${port}/metrics`, { headers });
  return { status: r.status, contentType: r.headers.get('content-type') ?? '', body: await r.text() };
}

/**
 * The value of one sample in a text exposition: `name` and every label in `labels` must match
 * (other labels are ignored). Undefined when absent; throws when several samples match.
 */
export function sample(body: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found: number[] = [];
  for (const line of body.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = new Map<string, string>();
    for (const l of (m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) got.set(l[1]!, l[2]!);
    if (Object.entries(labels).every(([k, v]) => got.get(k) === v)) found.push(Number(m[4]));
  }
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0];
}
