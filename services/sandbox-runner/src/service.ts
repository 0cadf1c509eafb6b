import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { topology, type Config } from '@handplane/contracts';
import type { Clock } from '@handplane/kernel';
import { bindTelemetry, connectNats, createLogger, listeningPort, natsCheck, RunnerRegistry, startHttpApp, type Logger, type ReadinessCheck } from '@handplane/platform';
import { runnerMetrics } from './runner-metrics';
import { AppModule } from './app.module';
import { startHeartbeat } from './app/heartbeat';
import { Runner } from './app/runner';
import { removeCgroupParents } from './app/sandbox/cgroups';
import { detectSandboxHost, type SandboxKind } from './app/sandbox/host';
import { bindServer, hostPort, serveRunner, serverCredentials, shutdownServer } from './grpc/grpc-server';
import { runnerGrpcService, type RunnerIdentity } from './grpc/runner.grpc';
import { loadRunnerConfig } from './runner-config';

export interface RunnerOverrides {
  /** Where the runner-only settings (RUNNER_CAPACITY, RUNNER_TLS_*, …) are read; default process.env. */
  readonly env?: Record<string, string | undefined>;
  /** Replaces RUNNER_DATA_DIR. */
  readonly dataDir?: string;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Registry heartbeat period (default 2 s). */
  readonly heartbeatMs?: number;
  /** Period of the spool sweep (default: the retention, between 1 s and 60 s). */
  readonly sweepIntervalMs?: number;
}

export interface RunningRunner {
  stop(): Promise<void>;
  readonly httpPort: number;
  readonly grpcPort: number;
  readonly runnerId: string;
  /** "host:port" as published in the registry. */
  readonly address: string;
  readonly bootId: string;
  /** How this runner contains commands (found at start). */
  readonly containment: { readonly sandbox: SandboxKind; readonly cgroups: string; readonly enforces: { readonly pids: boolean; readonly memory: boolean } };
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };
const ID = /^[A-Za-z0-9_-]{1,128}$/;

function version(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version?: string }).version ?? '0.1.0';
  } catch {
    return '0.1.0';
  }
}

/** RUNNER_ID, or one derived from hostname and port: stable across restarts of the same runner. */
function runnerIdFor(configured: string, port: number): string {
  if (configured && !ID.test(configured)) throw new Error(`invalid RUNNER_ID ${JSON.stringify(configured)}: use 1-128 letters, digits, '_' or '-' (it is a NATS subject token)`);
  return configured || `runner-${createHash('sha256').update(`${hostname()}:${port}`).digest('hex').slice(0, 16)}`;
}

function assertBound(bound: boolean): void {
  if (!bound) throw new Error('gRPC server not bound');
}

function advertised(configured: string, host: string, port: number): string {
  if (configured) return configured;
  const wildcard = host === '0.0.0.0' || host === '::' || host === '[::]';
  return hostPort(wildcard ? hostname() : host, port);
}

/**
 * The runner needs only the registry bucket, not the event streams (it never appends events), so
 * it does not call ensureStreams.
 *
 * Starts the sandbox runner: the gRPC Runner service on RUNNER_HOST:RUNNER_PORT (mTLS, or
 * plaintext on loopback only), the spool in the data directory, the registry heartbeat, and the
 * Nest HTTP app for /healthz and /readyz on RUNNER_HTTP_PORT. Port 0 picks free ports.
 */
export async function startRunner(config: Config, overrides: RunnerOverrides = {}): Promise<RunningRunner> {
  const own = loadRunnerConfig(overrides.env ?? process.env);
  const logger = overrides.logger ?? createLogger('sandbox-runner', config.LOG_LEVEL);
  const clock = overrides.clock ?? systemClock;
  const tls = own.RUNNER_TLS_CERT ? { cert: own.RUNNER_TLS_CERT, key: own.RUNNER_TLS_KEY, ca: own.RUNNER_TLS_CA } : null;
  const creds = await serverCredentials(config.RUNNER_HOST, tls);
  const bootId = randomUUID();
  const cleanup: (() => Promise<unknown>)[] = [];
  const unwind = async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn().catch((err) => logger.error({ err }, 'stop step failed'));
  };
  try {
    const dataDir = resolve(overrides.dataDir ?? config.RUNNER_DATA_DIR);
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    const sandbox = await detectSandboxHost({
      want: own.RUNNER_SANDBOX,
      cgroups: own.RUNNER_CGROUPS,
      // The cgroup parents are named after the data dir: a restarted runner finds its commands' cgroups again.
      key: createHash('sha256').update(await realpath(dataDir)).digest('hex').slice(0, 12),
      limits: { pidsMax: own.RUNNER_PIDS_MAX, memoryMaxBytes: own.RUNNER_MEMORY_MAX_BYTES },
      logger,
    });
    const runner = await Runner.open({
      dataDir,
      bootId,
      capacity: own.RUNNER_CAPACITY,
      stopGraceMs: config.STOP_GRACE_MS,
      defaultTimeoutMs: config.TASK_DEADLINE_MAX_MS,
      retentionMs: own.RUNNER_SPOOL_RETENTION_MS,
      sandbox,
      spoolMaxBytes: own.RUNNER_SPOOL_MAX_BYTES,
      clock,
      logger,
    });
    const { server, port: grpcPort } = await bindServer(config.RUNNER_HOST, config.RUNNER_PORT, creds);
    let bound = true;
    cleanup.push(async () => {
      bound = false;
      await shutdownServer(server, 2000);
    });
    cleanup.push(() => removeCgroupParents(sandbox.cgroups));
    // Runs before the server closes (cleanup unwinds in reverse): in 'stop' mode readers get their exit records.
    cleanup.push(() => runner.shutdown(Math.min(config.STOP_GRACE_MS, 5000), own.RUNNER_ON_SHUTDOWN));
    const identity: RunnerIdentity = { runnerId: runnerIdFor(config.RUNNER_ID, grpcPort), bootId };
    const telemetry = runnerMetrics();
    telemetry.watch(runner, own.RUNNER_CAPACITY);
    serveRunner(server, runnerGrpcService(runner, identity, logger.child({ runnerId: identity.runnerId })), telemetry.metrics);
    const address = advertised(own.RUNNER_ADVERTISE_ADDRESS, config.RUNNER_HOST, grpcPort);

    const nats = await connectNats(config.NATS_URL, `sandbox-runner-${identity.runnerId}`);
    cleanup.push(() => nats.nc.drain());
    bindTelemetry(nats, telemetry.metrics);
    const registry = await RunnerRegistry.open(nats, topology(config.NATS_PREFIX).runnersBucket, config.STREAM_REPLICAS);
    const v = version();
    const record = () => ({ runnerId: identity.runnerId, address, capacity: own.RUNNER_CAPACITY, running: runner.running, version: v, bootId, heartbeatAt: clock.now().toISOString() });
    const heartbeat = await startHeartbeat(registry, record, overrides.heartbeatMs ?? 2000, logger);
    cleanup.push(() => heartbeat.stop());

    const sweepMs = overrides.sweepIntervalMs ?? Math.min(60_000, Math.max(1000, own.RUNNER_SPOOL_RETENTION_MS));
    let sweeping: Promise<unknown> | null = null;
    const sweeper = setInterval(() => {
      sweeping ??= runner
        .sweep()
        .catch((err) => logger.error({ err }, 'spool sweep failed'))
        .finally(() => (sweeping = null));
    }, sweepMs);
    cleanup.push(async () => {
      clearInterval(sweeper);
      await sweeping;
    });

    const grpcCheck: ReadinessCheck = { name: 'grpc', check: async () => assertBound(bound) };
    const app = await startHttpApp(AppModule.register(() => [natsCheck(nats), grpcCheck]), config.RUNNER_HTTP_PORT, logger, undefined, { metrics: telemetry.metrics });
    cleanup.push(() => app.close());
    logger.info({ runnerId: identity.runnerId, address, grpcPort, bootId }, 'sandbox runner started');
    const containment = { sandbox: sandbox.kind, cgroups: sandbox.cgroups.description, enforces: sandbox.cgroups.enforces };
    return { stop: unwind, httpPort: listeningPort(app), grpcPort, runnerId: identity.runnerId, address, bootId, containment };
  } catch (e) {
    await unwind();
    throw e;
  }
}
