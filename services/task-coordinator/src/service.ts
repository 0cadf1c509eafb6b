import type { Config } from '@handplane/contracts';
import { topology } from '@handplane/contracts';
import type { Clock } from '@handplane/kernel';
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
  RunnerClients,
  RunnerRegistry,
  runProjector,
  startHttpApp,
  type Logger,
} from '@handplane/platform';
import { AppModule } from './app.module';
import { enforceBudgets } from './app/budgets';
import { CompletionOutbox } from './app/completion-outbox';
import { publishOverdueReport } from './app/overdue-report';
import { coordinatorMetrics } from './coordinator-metrics';
import { ConversationTenants } from './app/conversation-tenant';
import { Placements } from './app/placements';
import { DeadlineWatch } from './app/deadlines';
import type { CoordinatorDeps } from './app/deps';
import { epochsProjection } from './app/epochs';
import { backgroundDueTasks } from './app/foreground.sweep';
import { every } from './app/periodic';
import { Reconciler, type ReconcileReport } from './app/reconcile';
import { stopEndedEpochTasks } from './app/stop-all';
import { stopSweep } from './app/stop-signal';
import { TaskRepository } from './app/task-repository';
import { ConditionWatcher } from './app/wait-conditions';
import { tasksProjection } from './app/tasks.projection';
import { serveProjectionRebuilds } from '@handplane/platform';
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
  /** Period of the condition-wait watcher (default 500 ms). */
  readonly conditionSweepMs?: number;
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
    // Two projector leaders hold a connection each (the advisory locks of stops and reconciliation use lockPool).
    const pool = createPool(config.DATABASE_URL, 20, (e) => logger.warn({ err: e }, 'idle postgres client error'));
    closers.push(() => pool.end());
    // Advisory locks (one stop or reconciliation at a time) hold their connection while the work runs:
    // their own pool, so lock holders never starve the handlers and sweeps they wait on.
    const lockPool = createPool(config.DATABASE_URL, 12, (e) => logger.warn({ err: e }, 'idle postgres lock client error'));
    closers.push(() => lockPool.end());
    const metrics = coordinatorMetrics(pool);
    bindTelemetry(nats, metrics);
    const runners = grpcRunnerPort(new RunnerClients(o.runnerTls, metrics, { onReplaced: (address, notReadyForMs) => logger.warn({ address, notReadyForMs }, 'runner channel stalled: replaced by a new connection') }), logger, o.runnerCallTimeoutMs);
    closers.push(() => runners.close());
    const store = new EventStore(nats);
    const d: CoordinatorDeps = {
      t,
      nats,
      store,
      tasks: new TaskRepository(store, t),
      pool,
      lockPool,
      clock: o.clock ?? systemClock,
      logger,
      registry: await RunnerRegistry.open(nats, t.runnersBucket, config.STREAM_REPLICAS),
      runners,
      placements: new Placements(),
      conversations: new ConversationTenants(nats, t),
      settings: {
        foregroundWindowMs: config.FOREGROUND_WINDOW_MS,
        defaultDeadlineMs: config.TASK_DEADLINE_MS,
        maxDeadlineMs: config.TASK_DEADLINE_MAX_MS,
        runnerLostAfterMs: config.RUNNER_LOST_AFTER_MS,
        dispatchMaxDeliver: o.dispatchMaxDeliver ?? 8,
        stopGraceMs: config.STOP_GRACE_MS,
        retryMaxAttempts: config.RETRY_MAX_ATTEMPTS,
        abandonStartAfterMs: o.abandonStartAfterMs ?? 15_000,
        budgets: {
          conversation: { maxConcurrent: config.BUDGET_CONV_MAX_CONCURRENT, maxRuntimeMs: config.BUDGET_CONV_MAX_RUNTIME_MS, maxOutputBytes: config.BUDGET_CONV_MAX_OUTPUT_BYTES },
          tenant: { maxConcurrent: config.BUDGET_TENANT_MAX_CONCURRENT, maxRuntimeMs: config.BUDGET_TENANT_MAX_RUNTIME_MS, maxOutputBytes: config.BUDGET_TENANT_MAX_OUTPUT_BYTES },
        },
        overdueGraceMs: config.OVERDUE_GRACE_MS,
      },
    };
    const outbox = new CompletionOutbox(d);

    const projections = [tasksProjection(t), epochsProjection(t)];
    for (const p of projections) metrics.watchProjection(nats, pool, p);
    const projectors = projections.map((p) => runProjector(nats, pool, p, logger, 'task-coordinator'));
    closers.push(() => Promise.all(projectors.map((p) => p.stop())));
    // `handplane projections rebuild tasks|coordinator-epochs` runs here, where the projections live.
    const rebuilds = serveProjectionRebuilds(nats, pool, t.prefix, projections, logger, config.ADMIN_TOKEN);
    closers.push(() => rebuilds.stop());
    const consumers = await startConsumers(nats, d, outbox);
    closers.push(() => Promise.all(consumers.map((c) => c.stop())));
    const subs = serveCoordinatorRpc(nats, d);
    closers.push(() => subs.forEach((s) => s.unsubscribe()));

    const deadlines = new DeadlineWatch(d);
    const conditions = new ConditionWatcher(d);
    const reconciler = new Reconciler(d);
    const stopMs = o.stopSweepMs ?? 1000;
    // Every timer is a sweep over the read model, so none is lost with the process.
    const loops = [
      every(o.foregroundSweepMs ?? 250, 'foreground-cutover', logger, () => backgroundDueTasks(d)),
      every(o.outboxSweepMs ?? 1000, 'completion-outbox', logger, () => outbox.sweep()),
      every(stopMs, 'deadlines', logger, () => deadlines.sweep()),
      every(stopMs, 'stop-signals', logger, () => stopSweep(d)),
      every(stopMs, 'ended-epochs', logger, () => stopEndedEpochTasks(d)),
      every(stopMs, 'budgets', logger, () => enforceBudgets(d)),
      every(o.conditionSweepMs ?? 500, 'wait-conditions', logger, () => conditions.sweep()),
      every(config.OVERDUE_REPORT_INTERVAL_MS, 'overdue-report', logger, () => publishOverdueReport(d)),
      every(config.RECONCILE_INTERVAL_MS, 'reconcile', logger, () => reconciler.run()),
    ];
    closers.push(() => Promise.all(loops.map((l) => l.stop())));

    const app = await startHttpApp(AppModule.register(() => [natsCheck(nats), postgresCheck(pool)]), config.COORDINATOR_PORT, logger, undefined, { metrics });
    closers.push(() => app.close());
    const httpPort = listeningPort(app);
    logger.info({ httpPort, prefix: t.prefix || undefined }, 'task coordinator started');
    return { httpPort, reconcile: () => reconciler.run(), stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
