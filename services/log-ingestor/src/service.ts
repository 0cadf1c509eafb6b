import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
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
  runDurableConsumer,
  RunnerClients,
  RunnerRegistry,
  startHttpApp,
  type Logger,
} from '@handplane/platform';
import { AppModule } from './app.module';
import type { IngestorDeps, IngestorFaults, IngestorSettings } from './app/deps';
import { IngestStats, type IngestStatsSnapshot } from './app/ingest-stats';
import { Ingestor } from './app/ingestor';
import { onTaskMessage } from './app/task-feed';
import { TraceLinks } from './app/trace-links';
import { ingestorMetrics } from './ingestor-metrics';
import { loadIngestorConfig, type IngestorConfig } from './ingestor-config';
import { serveDeliveryRpc } from './nats/delivery.rpc';

/** What a test (or another embedding) may change; everything else comes from the config. */
export interface IngestorOverrides {
  readonly instanceId?: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  readonly leaseMs?: number;
  readonly claimIntervalMs?: number;
  readonly maxActive?: number;
  readonly flushBytes?: number;
  readonly flushMs?: number;
  readonly maxTextBytes?: number;
  readonly maxRowBytes?: number;
  readonly queueHighWaterBytes?: number;
  /** Replaces PROMPT_QUIET_MS. */
  readonly promptQuietMs?: number;
  /** Replaces OUTPUT_CAP_BYTES. */
  readonly outputCapBytes?: number;
  /** Where the ingestor-only settings (OUTPUT_CAP_BYTES) are read; default process.env. */
  readonly env?: Record<string, string | undefined>;
  readonly faults?: IngestorFaults;
  /** mTLS material for calling runners off loopback (main.ts reads it from RUNNER_TLS_*). */
  readonly runnerTls?: { ca: Buffer; cert: Buffer; key: Buffer };
}

/** A running ingestor. */
export interface RunningIngestor {
  readonly httpPort: number;
  readonly instanceId: string;
  /** Commands this instance is reading right now. */
  activeCommands(): string[];
  /** High-water marks of what this instance held in memory (bounded buffering is checked with them). */
  stats(): IngestStatsSnapshot;
  /** Stops consumers and workers, frees this instance's leases, closes connections. */
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };

/** Room left in a NATS message for headers: a LOGS chunk never reaches the server's payload limit. */
const HEADER_ROOM = 4096;

function settingsFrom(config: Config, own: IngestorConfig, o: IngestorOverrides, instanceId: string, maxPayload: number): IngestorSettings {
  return {
    instanceId,
    leaseMs: o.leaseMs ?? 15_000,
    claimIntervalMs: o.claimIntervalMs ?? 200,
    maxActive: o.maxActive ?? 64,
    // Many rows per transaction is what makes Postgres fast (FACTS.md); 1 MiB bounds the batch in memory.
    flushBytes: o.flushBytes ?? 1024 * 1024,
    flushMs: o.flushMs ?? 50,
    maxRowBytes: Math.min(o.maxRowBytes ?? 64 * 1024, maxPayload - HEADER_ROOM),
    queueHighWaterBytes: o.queueHighWaterBytes ?? 1024 * 1024,
    outputCapBytes: o.outputCapBytes ?? own.OUTPUT_CAP_BYTES,
    maxTextBytes: o.maxTextBytes ?? 32 * 1024,
    promptQuietMs: o.promptQuietMs ?? own.PROMPT_QUIET_MS,
    runnerLostAfterMs: config.RUNNER_LOST_AFTER_MS,
    faults: o.faults,
  };
}

/**
 * Starts the log ingestor (ARCHITECTURE.md, step 4): the `ingestor-tasks` consumer that opens a
 * cursor per started command, the claim loop with its workers, and `/healthz` + `/readyz`.
 */
export async function startIngestor(config: Config, overrides: IngestorOverrides = {}): Promise<RunningIngestor> {
  const logger = overrides.logger ?? createLogger('log-ingestor', config.LOG_LEVEL);
  const own = loadIngestorConfig(overrides.env ?? process.env);
  const instanceId = overrides.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const t = topology(config.NATS_PREFIX);
  const nats = await connectNats(config.NATS_URL, `log-ingestor-${instanceId}`);
  const settings = settingsFrom(config, own, overrides, instanceId, nats.nc.info?.max_payload ?? 1024 * 1024);
  const cleanup: (() => Promise<void>)[] = [() => nats.nc.drain().catch(() => undefined)];
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      for (const step of [...cleanup].reverse()) await step().catch((e) => logger.warn({ err: e }, 'shutdown step failed'));
    })());
  try {
    await ensureStreams(nats.jsm, t, config.STREAM_REPLICAS);
    await migrate(config.DATABASE_URL);
    const pool = createPool(config.DATABASE_URL, 10, (e) => logger.warn({ err: e }, 'idle Postgres client error'));
    cleanup.push(() => pool.end());
    const stats = new IngestStats();
    // Read at scrape time only, once the HTTP app (started last) serves /metrics.
    const metrics = ingestorMetrics(pool, stats, () => ingestor.activeCommands().length);
    bindTelemetry(nats, metrics);
    const clients = new RunnerClients(overrides.runnerTls, metrics, { onReplaced: (address, notReadyForMs) => logger.warn({ address, notReadyForMs }, 'runner channel stalled: replaced by a new connection') });
    cleanup.push(async () => clients.close());
    const registry = await RunnerRegistry.open(nats, t.runnersBucket, config.STREAM_REPLICAS);
    const traces = new TraceLinks();
    const deps: IngestorDeps = { pool, nats, store: new EventStore(nats), topology: t, registry, clients, clock: overrides.clock ?? systemClock, logger, settings, stats, traces };

    const ingestor = new Ingestor(deps);
    const consumer = await runDurableConsumer(nats, {
      stream: t.streams.TASKS,
      durable: t.durable('ingestor-tasks'),
      filterSubject: t.all.task,
      logger,
      concurrency: 4,
      handler: async (m) => {
        if (await onTaskMessage(deps, m.data)) ingestor.wake();
      },
    });
    cleanup.push(() => consumer.stop());
    const rpc = serveDeliveryRpc(deps);
    cleanup.push(async () => rpc.unsubscribe());
    ingestor.start();
    cleanup.push(() => ingestor.stop());
    const app = await startHttpApp(AppModule.register({ checks: () => [natsCheck(nats), postgresCheck(pool)] }), config.INGESTOR_PORT, logger, undefined, { metrics });
    cleanup.push(() => app.close());
    logger.info({ instanceId, outputCapBytes: settings.outputCapBytes }, 'log-ingestor started');
    return { httpPort: listeningPort(app), instanceId, activeCommands: () => ingestor.activeCommands(), stats: () => stats.snapshot(), stop: close };
  } catch (e) {
    await close();
    throw e;
  }
}
