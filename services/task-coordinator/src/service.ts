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
import { DeadlineWatch } from './app/deadlines';
import type { CoordinatorDeps } from './app/deps';
import { epochsProjection } from './app/epochs';
import { backgroundDueTasks } from './app/foreground.sweep';
import { every } from './app/periodic';
import { Reconciler, type ReconcileReport } from './app/reconcile';
import { stopEndedEpochTasks } from './app/stop-all';
import { stopSweep } from './app/stop-signal';
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
  /** Period of the deadline, stop-signal and ended-epoch sweeps (default 1 s). */
  readonly stopSweepMs?: number;
  /** How long a task stopped before its start waits for an Exec on its way (default 15 s). */
  readonly abandonStartAfterMs?: number;
}

export interface RunningCoordinator {
  readonly httpPort: number;
  /** Runs one reconciliation pass now (undefined when another coordinator is running one). */
  reconcile(): Promise<ReconcileReport | undefined>;
  stop(): Promise<void>;
}

const systemClock: Clock = { now: () => new Date(), monotonicMs: () => performance.now() };

/**
 * Starts the Background Task Coordinator: `start-task`, `validate-task-wait`, `stop-task` and
 * `stop-all` over NATS, the dispatch / settle / notice consumers, the `tasks` and
 * `coordinator-epochs` projections, the foreground cutover, outbox, deadline, stop-signal and
 * ended-epoch sweeps, reconciliation (at start-up and every RECONCILE_INTERVAL_MS), and `/healthz` `/readyz`.
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
    // Two projector leaders hold a connection each; stop signals hold one per task while the runner answers.
    const pool = createPool(config.DATABASE_URL, 20, (e) => logger.warn({ err: e }, 'idle postgres client error'));
    closers.push(() => pool.end());
    const runners = grpcRunnerPort(new RunnerClients(o.runnerTls), logger, o.runnerCallTimeoutMs);
    closers.push(() => runners.close());
    const store = new EventStore(nats);
    const d: CoordinatorDeps = {
      t,
      nats,
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
        stopGraceMs: config.STOP_GRACE_MS,
        retryMaxAttempts: config.RETRY_MAX_ATTEMPTS,
        abandonStartAfterMs: o.abandonStartAfterMs ?? 15_000,
      },
    };
    const outbox = new CompletionOutbox(d);

    const projectors = [runProjector(nats, pool, tasksProjection(t), logger), runProjector(nats, pool, epochsProjection(t), logger)];
    closers.push(() => Promise.all(projectors.map((p) => p.stop())));
    const consumers = await startConsumers(nats, d, outbox);
    closers.push(() => Promise.all(consumers.map((c) => c.stop())));
    const subs = serveCoordinatorRpc(nats, d);
    closers.push(() => subs.forEach((s) => s.unsubscribe()));

    const deadlines = new DeadlineWatch(d);
    const reconciler = new Reconciler(d);
    const stopMs = o.stopSweepMs ?? 1000;
    // Every timer is a sweep over the read model, so none is lost with the process.
    const loops = [
      every(o.foregroundSweepMs ?? 250, 'foreground-cutover', logger, () => backgroundDueTasks(d)),
      every(o.outboxSweepMs ?? 1000, 'completion-outbox', logger, () => outbox.sweep()),
      every(stopMs, 'deadlines', logger, () => deadlines.sweep()),
      every(stopMs, 'stop-signals', logger, () => stopSweep(d)),
      every(stopMs, 'ended-epochs', logger, () => stopEndedEpochTasks(d)),
      every(config.RECONCILE_INTERVAL_MS, 'reconcile', logger, () => reconciler.run()),
    ];
    closers.push(() => Promise.all(loops.map((l) => l.stop())));

    const app = await startHttpApp(AppModule.register(() => [natsCheck(nats), postgresCheck(pool)]), config.COORDINATOR_PORT, logger);
    closers.push(() => app.close());
    const httpPort = listeningPort(app);
    logger.info({ httpPort, prefix: t.prefix || undefined }, 'task coordinator started');
    return { httpPort, reconcile: () => reconciler.run(), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
