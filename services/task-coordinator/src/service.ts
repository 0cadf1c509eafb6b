import type { Config } from '@handplane/contracts';
import { topology } from '@handplane/contracts';
import type { Clock } from '@handplane/kernel';
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
  RunnerClients,
  RunnerRegistry,
  runProjector,
  startHttpApp,
  type Logger,
} from '@handplane/platform';
import { AppModule } from './app.module';
import { CompletionOutbox } from './app/completion-outbox';
import { overdueTasks, type DeadlineEnforcer } from './app/deadlines';
import type { CoordinatorDeps } from './app/deps';
import { backgroundDueTasks } from './app/foreground.sweep';
import { every } from './app/periodic';
import { TaskRepository } from './app/task-repository';
import { tasksProjection } from './app/tasks.projection';
import { grpcRunnerPort } from './grpc/runner-port.grpc';
import { startConsumers } from './nats/consumers';
import { serveCoordinatorRpc } from './nats/rpc';

/** What tests (and a future main with TLS) may replace. */
export interface CoordinatorOverrides {
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** mTLS material for runner connections (plaintext is allowed on loopback only). */
  readonly runnerTls?: { ca: Buffer; cert: Buffer; key: Buffer };
  readonly foregroundSweepMs?: number;
  readonly outboxSweepMs?: number;
  /** Deliveries of a TaskRegistered before its start fails with "no runner available". */
  readonly dispatchMaxDeliver?: number;
  readonly runnerCallTimeoutMs?: number;
  /** Issue 4: the deadline enforcer. Without one, deadlines are recorded but not enforced. */
  readonly deadlineEnforcer?: DeadlineEnforcer;
}

export interface RunningCoordinator {
  readonly httpPort: number;
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };

/**
 * Starts the Background Task Coordinator: `start-task` and `validate-task-wait` over NATS, the
 * dispatch / settle / notice consumers, the `tasks` projection, the foreground cutover and outbox
 * sweeps, and `/healthz` `/readyz`.
 */
export async function startCoordinator(config: Config, o: CoordinatorOverrides = {}): Promise<RunningCoordinator> {
  const logger = o.logger ?? createLogger('task-coordinator', config.LOG_LEVEL);
  const t = topology(config.NATS_PREFIX);
  const closers: (() => Promise<unknown> | unknown)[] = [];
  const stop = async () => {
    for (const close of closers.reverse()) await Promise.resolve(close()).catch((e) => logger.warn({ err: e }, 'stop step failed'));
    closers.length = 0;
  };
  try {
    const nats = await connectNats(config.NATS_URL, 'task-coordinator');
    closers.push(() => nats.nc.drain());
    await ensureStreams(nats.jsm, t, config.STREAM_REPLICAS);
    await migrate(config.DATABASE_URL);
    const pool = createPool(config.DATABASE_URL, 10, (e) => logger.warn({ err: e }, 'idle postgres client error'));
    closers.push(() => pool.end());
    const runners = grpcRunnerPort(new RunnerClients(o.runnerTls), logger, o.runnerCallTimeoutMs);
    closers.push(() => runners.close());
    const store = new EventStore(nats);
    const d: CoordinatorDeps = {
      t,
      store,
      tasks: new TaskRepository(store, t),
      pool,
      clock: o.clock ?? systemClock,
      logger,
      registry: await RunnerRegistry.open(nats, t.runnersBucket, config.STREAM_REPLICAS),
      runners,
      settings: {
        foregroundWindowMs: config.FOREGROUND_WINDOW_MS,
        defaultDeadlineMs: config.TASK_DEADLINE_MS,
        maxDeadlineMs: config.TASK_DEADLINE_MAX_MS,
        runnerLostAfterMs: config.RUNNER_LOST_AFTER_MS,
        dispatchMaxDeliver: o.dispatchMaxDeliver ?? 8,
      },
    };
    const outbox = new CompletionOutbox(d);

    const projector = runProjector(nats, pool, tasksProjection(t), logger);
    closers.push(() => projector.stop());
    const consumers = await startConsumers(nats, d, outbox);
    closers.push(() => Promise.all(consumers.map((c) => c.stop())));
    const subs = serveCoordinatorRpc(nats, d);
    closers.push(() => subs.forEach((s) => s.unsubscribe()));

    const loops = [
      every(o.foregroundSweepMs ?? 250, 'foreground-cutover', logger, () => backgroundDueTasks(d)),
      every(o.outboxSweepMs ?? 1000, 'completion-outbox', logger, () => outbox.sweep()),
    ];
    const enforce = o.deadlineEnforcer;
    if (enforce) loops.push(every(o.foregroundSweepMs ?? 250, 'deadlines', logger, async () => enforce(await overdueTasks(d))));
    closers.push(() => Promise.all(loops.map((l) => l.stop())));

    const app = await startHttpApp(AppModule.register(() => [natsCheck(nats), postgresCheck(pool)]), config.COORDINATOR_PORT, logger);
    closers.push(() => app.close());
    const httpPort = listeningPort(app);
    logger.info({ httpPort, prefix: t.prefix || undefined }, 'task coordinator started');
    return { httpPort, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
