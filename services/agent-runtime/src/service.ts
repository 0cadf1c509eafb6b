import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Pool } from 'pg';
import type { INestApplication } from '@nestjs/common';
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
  startHttpApp,
  type Logger,
  type Nats,
  type RunningConsumer,
} from '@handplane/platform';
import { AppModule } from './app.module';
import { modelFromConfig } from './app/model/model-provider';
import type { ModelProvider } from './app/model/transcript';
import { startConvConsumer } from './app/run/conv-consumer';
import { onEpochEnded } from './app/run/epoch-ended';
import { ConversationRunner } from './app/run/conversation-runner';
import { createTools } from './app/tools/tools';
import { natsHost } from './app/tools/nats-host';
import { parseApprovalPolicy } from './app/approval/approval-policy';
import { loadRuntimeConfig, type RuntimeConfig } from './runtime-config';
import { runtimeMetrics } from './runtime-metrics';

/** What tests (and other embedders) may replace. */
export interface RuntimeOverrides {
  readonly model?: ModelProvider;
  readonly logger?: Logger;
  readonly clock?: Clock;
  /** Run lease duration (default RUN_LEASE_MS, 30 s); renewed every third of it while a run is in progress. */
  readonly leaseMs?: number;
  /** Sweep interval for queued work and abandoned runs (default RUN_SWEEP_MS, 5 s). */
  readonly sweepMs?: number;
  /** Lease owner name of this instance (default: host name and a random suffix). */
  readonly instanceId?: string;
  /** The runtime's own settings (default: read from the environment). */
  readonly runtimeConfig?: Partial<RuntimeConfig>;
}

export interface RunningRuntime {
  readonly httpPort: number;
  readonly runner: ConversationRunner;
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };

/**
 * Starts the agent runtime: the CONV consumer that queues messages and task completions, the
 * conversation runner (lease, model loop, tools, checkpoints) and the health endpoints.
 */
export async function startRuntime(config: Config, overrides: RuntimeOverrides = {}): Promise<RunningRuntime> {
  const logger = overrides.logger ?? createLogger('agent-runtime', config.LOG_LEVEL);
  const rc: RuntimeConfig = { ...loadRuntimeConfig(), ...overrides.runtimeConfig };
  const approvalPolicy = parseApprovalPolicy(rc.APPROVAL_POLICY);
  const model = overrides.model ?? modelFromConfig(config, rc);
  const t = topology(config.NATS_PREFIX);
  const cleanup: (() => Promise<unknown>)[] = [];
  const stopAll = async () => {
    for (const f of cleanup.splice(0).reverse()) await f().catch((e) => logger.warn({ err: e }, 'shutdown step failed'));
  };
  try {
    const nats: Nats = await connectNats(config.NATS_URL, 'agent-runtime');
    cleanup.push(() => nats.nc.drain());
    await ensureStreams(nats.jsm, t, config.STREAM_REPLICAS);
    await migrate(config.DATABASE_URL);
    const pool: Pool = createPool(config.DATABASE_URL, 10, (e) => logger.warn({ err: e }, 'idle postgres client failed'));
    cleanup.push(() => pool.end());
    const metrics = runtimeMetrics(pool);
    bindTelemetry(nats, metrics);
    const store = new EventStore(nats);
    const host = natsHost({ nats, topology: t, store, pool, logger });
    const tools = createTools({ host, logger, foregroundWindowMs: config.FOREGROUND_WINDOW_MS, approvalPolicy });
    const clock = overrides.clock ?? systemClock;
    const owner = overrides.instanceId ?? (rc.RUNTIME_INSTANCE_ID || `${hostname()}-${randomUUID().slice(0, 8)}`);
    const leaseMs = overrides.leaseMs ?? rc.RUN_LEASE_MS;
    const runner = new ConversationRunner({
      pool,
      store,
      topology: t,
      logger,
      model,
      tools,
      clock,
      owner,
      leaseMs,
      sweepMs: overrides.sweepMs ?? rc.RUN_SWEEP_MS,
    });
    cleanup.push(() => runner.stop());
    const epochDeps = { pool, store, topology: t, clock, logger, owner, leaseMs };
    const consumer: RunningConsumer = await startConvConsumer({ nats, topology: t, pool, runner, logger, onEpochEnded: (id, ended) => onEpochEnded(epochDeps, id, ended) });
    cleanup.push(() => consumer.stop());
    runner.startSweeper();
    const app: INestApplication = await startHttpApp(AppModule.register(() => [natsCheck(nats), postgresCheck(pool)]), config.RUNTIME_PORT, logger, undefined, { metrics });
    cleanup.push(() => app.close());
    return { httpPort: listeningPort(app), runner, stop: stopAll };
  } catch (e) {
    await stopAll();
    throw e;
  }
}
