import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { Clock } from '@handplane/kernel';
import { topology, type Config } from '@handplane/contracts';
import {
  bindTelemetry,
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
  type ServiceMetrics,
} from '@handplane/platform';
import { AppModule } from './app.module';
import { assertSafeAuthConfig, createTokenVerifier } from './app/auth';
import { conversationsProjection } from './app/conversations.projection';
import { gatewayReadModels } from './app/read-models/read-models';
import { serveProjectionRebuilds } from '@handplane/platform';
import { postgresLimiter, tokenBucketLimiter } from './app/rate-limit';
import { sseTickets, ticketKey } from './app/sse-tickets';
import type { GatewayResources } from './app/resources';
import { trackConnections } from './http/connections';
import { gatewayMetrics, gatewayMetricsAccess } from './gateway-metrics';

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
  /** Bearer token for `/metrics` (default: the METRICS_TOKEN environment variable). */
  readonly metricsToken?: string;
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
  let server: Server | undefined;
  const metrics = gatewayMetrics(() => server);
  bindTelemetry(nats, metrics);
  try {
    await ensureStreams(nats.jsm, t, config.STREAM_REPLICAS);
    const registry = await RunnerRegistry.open(nats, t.runnersBucket, config.STREAM_REPLICAS);
    const projection = conversationsProjection(t);
    const projector = runProjector(nats, pool, projection, logger, 'gateway');
    metrics.watchProjection(nats, pool, projection);
    stops.unshift(() => projector.stop());
    // The other read models the gateway hosts, and the rebuilds of all of them (README "Projections").
    // Their own pool: each leading projector holds a connection for its lock, and HTTP must not wait for them.
    const hosted = [projection, ...gatewayReadModels(t)];
    const projectionPool = createPool(config.DATABASE_URL, 2 * hosted.length + 2, (err) => logger.warn({ err }, 'idle database client failed'));
    stops.unshift(() => projectionPool.end());
    const more = hosted.slice(1).map((p) => runProjector(nats, projectionPool, p, logger, 'gateway'));
    const rebuilds = serveProjectionRebuilds(nats, projectionPool, t.prefix, hosted, logger, config.ADMIN_TOKEN);
    stops.unshift(() => rebuilds.stop(), ...more.map((p) => () => p.stop()));
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
      overdueGraceMs: config.OVERDUE_GRACE_MS,
    };
    const http = await serveHttp(config, overrides, resources, [natsCheck(nats), postgresCheck(pool), runnerCheck(registry, config.RUNNER_LOST_AFTER_MS)], metrics);
    server = http.server;
    stops.unshift(http.stop);
    let stopping: Promise<void> | undefined;
    return { httpPort: http.port, stop: () => (stopping ??= stopAll(stops, logger)) };
  } catch (e) {
    await stopAll(stops, logger);
    throw e;
  }
}

async function serveHttp(
  config: Config,
  overrides: GatewayOverrides,
  resources: GatewayResources,
  checks: ReadinessCheck[],
  metrics: ServiceMetrics,
): Promise<{ port: number; server: Server; stop: () => Promise<void> }> {
  const { logger } = resources;
  const key = ticketKey(config);
  if (!key.shared) logger.warn('SSE tickets use a per-process key (JWKS with no JWT_SECRET): set SSE_TICKET_SECRET when running several gateways');
  const limiter =
    config.RATE_LIMIT_STORE === 'memory'
      ? tokenBucketLimiter({ perMinute: config.RATE_LIMIT_PER_MINUTE, burst: config.RATE_LIMIT_BURST, nowMs: () => resources.clock.monotonicMs() })
      : postgresLimiter({ perMinute: config.RATE_LIMIT_PER_MINUTE, burst: config.RATE_LIMIT_BURST, pool: resources.pool });
  const module = AppModule.register({
    resources,
    verifier: createTokenVerifier(config),
    tickets: sseTickets(resources, key.key),
    limiter,
    checks: () => checks,
    sse: { heartbeatMs: config.SSE_HEARTBEAT_MS, maxBufferBytes: config.SSE_MAX_BUFFER_BYTES },
    logger,
    adminToken: config.ADMIN_TOKEN,
  });
  const metricsAccess = gatewayMetricsAccess(config, overrides.metricsToken ?? process.env.METRICS_TOKEN);
  const app = await startHttpApp(module, config.GATEWAY_PORT, logger, overrides.host ?? '0.0.0.0', { jsonBodyLimit: '1mb', metrics, metricsAccess });
  const connections = trackConnections(app.getHttpServer() as Server);
  return {
    port: listeningPort(app),
    server: app.getHttpServer() as Server,
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
