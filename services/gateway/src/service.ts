import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Clock } from '@handplane/kernel';
import { topology, type Config } from '@handplane/contracts';
import {
  connectNats,
  createLogger,
  createPool,
  ensureStreams,
  EventStore,
  listeningPort,
  migrate,
  natsCheck,
  postgresCheck,
  RunnerRegistry,
  runnerCheck,
  runProjector,
  startHttpApp,
  type Logger,
  type ReadinessCheck,
} from '@handplane/platform';
import { AppModule } from './app.module';
import { assertSafeAuthConfig, createTokenVerifier } from './app/auth';
import { conversationsProjection } from './app/conversations.projection';
import { tokenBucketLimiter } from './app/rate-limit';
import { sseTickets, ticketKey } from './app/sse-tickets';
import type { GatewayResources } from './app/resources';
import { trackConnections } from './http/connections';

/** What tests (and later the CLI) may replace. */
export interface GatewayOverrides {
  readonly logger?: Logger;
  readonly clock?: Clock;
  readonly newId?: () => string;
  readonly host?: string;
  /** Read-your-writes wait before a write answers 503 (default 10 s). */
  readonly projectionWaitMs?: number;
  /** How long to wait for the coordinator (default 15 s). */
  readonly rpcTimeoutMs?: number;
  /** How long requests in flight may finish when stopping (default 10 s). */
  readonly shutdownGraceMs?: number;
}

export interface RunningGateway {
  stop(): Promise<void>;
  readonly httpPort: number;
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };

/** Starts the gateway: HTTP API, SSE and the `conversations` projection. */
export async function startGateway(config: Config, overrides: GatewayOverrides = {}): Promise<RunningGateway> {
  assertSafeAuthConfig(config);
  const logger = overrides.logger ?? createLogger('gateway', config.LOG_LEVEL);
  const t = topology(config.NATS_PREFIX);
  await migrate(config.DATABASE_URL);
  const nats = await connectNats(config.NATS_URL, 'gateway');
  const pool = createPool(config.DATABASE_URL, 10, (err) => logger.warn({ err }, 'idle database client failed'));
  const stops: (() => Promise<unknown>)[] = [() => pool.end(), () => nats.nc.drain()];
  try {
    await ensureStreams(nats.jsm, t, config.STREAM_REPLICAS);
    const registry = await RunnerRegistry.open(nats, t.runnersBucket, config.STREAM_REPLICAS);
    const projector = runProjector(nats, pool, conversationsProjection(t), logger);
    stops.unshift(() => projector.stop());
    const resources: GatewayResources = {
      nats,
      pool,
      store: new EventStore(nats),
      topology: t,
      clock: overrides.clock ?? systemClock,
      newId: overrides.newId ?? randomUUID,
      logger,
      projectionWaitMs: overrides.projectionWaitMs ?? 10_000,
      rpcTimeoutMs: overrides.rpcTimeoutMs ?? 15_000,
    };
    const http = await serveHttp(config, overrides, resources, [natsCheck(nats), postgresCheck(pool), runnerCheck(registry, config.RUNNER_LOST_AFTER_MS)]);
    stops.unshift(http.stop);
    let stopping: Promise<void> | undefined;
    return { httpPort: http.port, stop: () => (stopping ??= stopAll(stops, logger)) };
  } catch (e) {
    await stopAll(stops, logger);
    throw e;
  }
}

async function serveHttp(config: Config, overrides: GatewayOverrides, resources: GatewayResources, checks: ReadinessCheck[]): Promise<{ port: number; stop: () => Promise<void> }> {
  const { logger } = resources;
  const key = ticketKey(config);
  if (!key.shared) logger.warn('SSE tickets use a per-process key (JWKS with no JWT_SECRET): set SSE_TICKET_SECRET when running several gateways');
  const limiter = tokenBucketLimiter({ perMinute: config.RATE_LIMIT_PER_MINUTE, burst: config.RATE_LIMIT_BURST, nowMs: () => resources.clock.monotonicMs() });
  const module = AppModule.register({
    resources,
    verifier: createTokenVerifier(config),
    tickets: sseTickets(resources, key.key),
    limiter,
    checks: () => checks,
    sse: { heartbeatMs: config.SSE_HEARTBEAT_MS, maxBufferBytes: config.SSE_MAX_BUFFER_BYTES },
    logger,
  });
  const app = await startHttpApp(module, config.GATEWAY_PORT, logger, overrides.host ?? '0.0.0.0', { jsonBodyLimit: '1mb' });
  const connections = trackConnections(app.getHttpServer() as Server);
  return {
    port: listeningPort(app),
    async stop() {
      // Open SSE streams are ended by the app's shutdown hook; idle sockets go at once.
      const cancel = connections.shutdown(overrides.shutdownGraceMs ?? 10_000);
      await app.close();
      cancel();
    },
  };
}

// In order: HTTP (ends SSE streams first), projector, Postgres, NATS; one failure does not skip the rest.
async function stopAll(stops: (() => Promise<unknown>)[], logger: Logger): Promise<void> {
  for (const s of stops) {
    await s().catch((err) => logger.warn({ err }, 'error while stopping'));
  }
}
