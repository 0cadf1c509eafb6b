import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
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
  runDurableConsumer,
  RunnerClients,
  RunnerRegistry,
  startHttpApp,
  type Logger,
} from '@handplane/platform';
import { AppModule } from './app.module';
import type { IngestorDeps, IngestorFaults, IngestorSettings } from './app/deps';
import { Ingestor } from './app/ingestor';
import { onTaskMessage } from './app/task-feed';

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
  readonly faults?: IngestorFaults;
}

/** A running ingestor. */
export interface RunningIngestor {
  readonly httpPort: number;
  readonly instanceId: string;
  /** Commands this instance is reading right now. */
  activeCommands(): string[];
  /** Stops consumers and workers, frees this instance's leases, closes connections. */
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };

function settingsFrom(config: Config, o: IngestorOverrides): IngestorSettings {
  return {
    instanceId: o.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    leaseMs: o.leaseMs ?? 15_000,
    claimIntervalMs: o.claimIntervalMs ?? 200,
    maxActive: o.maxActive ?? 64,
    flushBytes: o.flushBytes ?? 256 * 1024,
    flushMs: o.flushMs ?? 50,
    maxRowBytes: 64 * 1024,
    maxTextBytes: o.maxTextBytes ?? 32 * 1024,
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
  const settings = settingsFrom(config, overrides);
  const t = topology(config.NATS_PREFIX);
  const nats = await connectNats(config.NATS_URL, `log-ingestor-${settings.instanceId}`);
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
    const clients = new RunnerClients();
    cleanup.push(async () => clients.close());
    const registry = await RunnerRegistry.open(nats, t.runnersBucket, config.STREAM_REPLICAS);
    const deps: IngestorDeps = { pool, nats, store: new EventStore(nats), topology: t, registry, clients, clock: overrides.clock ?? systemClock, logger, settings };

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
    ingestor.start();
    cleanup.push(() => ingestor.stop());
    const app = await startHttpApp(AppModule.register({ checks: () => [natsCheck(nats), postgresCheck(pool)] }), config.INGESTOR_PORT, logger);
    cleanup.push(() => app.close());
    logger.info({ instanceId: settings.instanceId }, 'log-ingestor started');
    return { httpPort: listeningPort(app), instanceId: settings.instanceId, activeCommands: () => ingestor.activeCommands(), stop: close };
  } catch (e) {
    await close();
    throw e;
  }
}
