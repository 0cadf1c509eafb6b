import {
  decodeConversationEvent,
  decodeSandboxCommandEvent,
  decodeTaskEvent,
  loadConfig,
  startTaskReplySchema,
  stopAllReplySchema,
  stopTaskReplySchema,
  validateTaskWaitReplySchema,
  type Config,
  type StartTaskReply,
  type StopAllReply,
  type StopTaskReply,
  type ValidateTaskWaitReply,
} from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { FixedClock, type Clock } from '@handplane/kernel';
import { callRpc, createLogger, createPool, EventStore } from '@handplane/platform';
import { ensureConversation, freshDatabase, testNats, waitFor } from '@handplane/testing';
import type { Pool } from 'pg';
import { startCoordinator, type CoordinatorOverrides, type RunningCoordinator } from '../src/service';

/** Real NATS (own prefix) + real Postgres (own database) + a coordinator under a fixed clock. */
export async function harness<C extends Clock = FixedClock>(label: string, env: Record<string, string> = {}, overrides: CoordinatorOverrides = {}, clockOf?: () => C) {
  const nats = await testNats(label);
  const db = await freshDatabase(label);
  const clock = clockOf ? clockOf() : (new FixedClock('2026-01-01T00:00:00.000Z') as unknown as C);
  const config: Config = loadConfig({
    NATS_PREFIX: nats.prefix,
    DATABASE_URL: db.url,
    COORDINATOR_PORT: '0',
    FOREGROUND_WINDOW_MS: '300',
    RUNNER_LOST_AFTER_MS: '3600000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...env,
  });
  const logger = createLogger('task-coordinator', config.LOG_LEVEL);
  const start = () => startCoordinator(config, { clock, logger, foregroundSweepMs: 50, outboxSweepMs: 200, stopSweepMs: 100, abandonStartAfterMs: 0, ...overrides });
  const pool: Pool = createPool(db.url, 2);
  const store = new EventStore(nats.nats);
  const t = nats.topology;
  let coordinator: RunningCoordinator | undefined = await start();

  const h = {
    t,
    nats: nats.nats,
    store,
    pool,
    clock,
    config,
    get coordinator() {
      return coordinator;
    },
    async restart(between?: () => Promise<void>) {
      await coordinator?.stop();
      coordinator = undefined;
      await between?.();
      coordinator = await start();
    },
    /** Creates the body's conversation in CONV first (as the gateway would), unless `{ create: false }`. */
    startTask: async (body: unknown, o: { create?: boolean } = {}): Promise<StartTaskReply> => {
      const b = body as { conversationId?: unknown; tenant?: unknown } | null;
      if (o.create !== false && typeof b?.conversationId === 'string' && typeof b.tenant === 'string') await ensureConversation(nats.nats, t, b.conversationId, b.tenant);
      return callRpc(nats.nats.nc, t.rpc.startTask, body, startTaskReplySchema);
    },
    stopTask: (body: { taskId: string; tenant?: string; userId?: string; attempt?: number; reason?: 'user' | 'policy' }): Promise<StopTaskReply> =>
      callRpc(nats.nats.nc, t.rpc.stopTask, { tenant: 'acme', userId: 'alice', ...body }, stopTaskReplySchema),
    stopAll: (body: { conversationId: string; epoch: number; tenant?: string; userId?: string }): Promise<StopAllReply> =>
      callRpc(nats.nats.nc, t.rpc.stopAll, { tenant: 'acme', userId: 'alice', ...body }, stopAllReplySchema),
    validateWait: (conversationId: string, taskIds: string[]): Promise<ValidateTaskWaitReply> =>
      callRpc(nats.nats.nc, t.rpc.validateTaskWait, { conversationId, taskIds }, validateTaskWaitReplySchema),
    taskEvents: async (taskId: string): Promise<TaskEvent[]> => (await store.read(t.streams.TASKS, t.task(taskId), decodeTaskEvent)).events.map((e) => e.event),
    convEvents: async (conversationId: string): Promise<ConversationEvent[]> =>
      (await store.read(t.streams.CONV, t.conv(conversationId), decodeConversationEvent)).events.map((e) => e.event),
    /** Appends to `cmd.<commandId>` as the log-ingestor does. */
    appendCommandEvents: async (commandId: string, events: SandboxCommandEvent[], msgId: string) => {
      const { lastSeq } = await store.read(t.streams.TASKS, t.cmd(commandId), decodeSandboxCommandEvent);
      return store.append(t.cmd(commandId), events, { expectedLastSeq: lastSeq, msgId });
    },
    async waitForTaskEvent<T extends TaskEvent['type']>(taskId: string, type: T, timeoutMs = 15_000): Promise<Extract<TaskEvent, { type: T }>> {
      const found = (await waitFor(async () => (await h.taskEvents(taskId)).find((e) => e.type === type), timeoutMs, `${type} on ${taskId}`)) as Extract<TaskEvent, { type: T }>;
      return found;
    },
    /** Waits until a durable consumer has nothing pending and nothing unacknowledged. */
    async waitForConsumerIdle(durable: string) {
      return waitFor(
        async () => {
          const i = await nats.nats.jsm.consumers.info(t.streams.TASKS, t.durable(durable));
          return i.num_pending === 0 && i.num_ack_pending === 0 ? i : undefined;
        },
        15_000,
        `${durable} idle`,
      );
    },
    async close() {
      await coordinator?.stop();
      await pool.end();
      await nats.close();
      await db.drop();
    },
  };
  return h;
}

export type Harness = Awaited<ReturnType<typeof harness<FixedClock>>>;

/** A start-task request body with sensible defaults. */
export function startBody(over: { requestId: string; command?: string; conversationId?: string; tenant?: string; userId?: string; env?: Record<string, string>; timeoutMs?: number; cwd?: string; runId?: string; origin?: 'user' | 'agent'; epoch?: number }) {
  return {
    requestId: over.requestId,
    conversationId: over.conversationId ?? 'conv-1',
    tenant: over.tenant ?? 'acme',
    userId: over.userId ?? 'alice',
    origin: over.origin ?? 'user',
    ...(over.runId ? { runId: over.runId } : {}),
    epoch: over.epoch ?? 3,
    input: {
      command: over.command ?? 'sleep 100',
      ...(over.cwd !== undefined ? { cwd: over.cwd } : {}),
      ...(over.env ? { env: over.env } : {}),
      ...(over.timeoutMs !== undefined ? { timeoutMs: over.timeoutMs } : {}),
    },
  };
}
