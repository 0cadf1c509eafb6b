import {
  decodeConversationEvent,
  decodeSandboxCommandEvent,
  decodeTaskEvent,
  loadConfig,
  startTaskReplySchema,
  stopAllReplySchema,
  stopTaskReplySchema,
  type Config,
  type StartTaskReply,
  type StopAllReply,
  type StopTaskReply,
} from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { callRpc, createLogger, createPool, EventStore } from '@handplane/platform';
import { ensureConversation, waitFor } from '@handplane/testing';
import type { Pool } from 'pg';
import { startIngestor, type RunningIngestor } from '../../services/log-ingestor/src/service';
import { startRunner, type RunningRunner } from '../../services/sandbox-runner/src/service';
import { IN_PROCESS_RUNNER, stackResources, testLogLevel as level } from '../stack-common';

/**
 * Real NATS (own prefix), a fresh database, a REAL sandbox runner (spawning real processes in a temp
 * data dir) and the REAL log-ingestor, both in-process. The coordinator is started by the test
 * (in-process, or as a child process it can SIGKILL).
 */
export async function realStack(label: string, env: Record<string, string> = {}) {
  const resources = await stackResources(label);
  const { nats, db, dataDir } = resources;
  const vars: Record<string, string> = {
    ...resources.vars,
    COORDINATOR_PORT: '0',
    INGESTOR_PORT: '0',
    ...IN_PROCESS_RUNNER,
    // Short deadlines: the runner arms its backstop timer per command (deadline + 2 × grace), and a
    // timer it failed to clear would keep the test process alive that long.
    TASK_DEADLINE_MS: '30000',
    LOG_LEVEL: level(),
    ...env,
  };
  const config: Config = loadConfig(vars);
  const runner: RunningRunner = await startRunner(config, { dataDir, env: vars, heartbeatMs: 500, logger: createLogger('sandbox-runner', level()) });
  let ingestor: RunningIngestor | undefined = await startIngestor(config, { logger: createLogger('log-ingestor', level()), leaseMs: 3000, claimIntervalMs: 100 });
  const pool: Pool = createPool(db.url, 4);
  const store = new EventStore(nats.nats);
  const t = nats.topology;

  const s = {
    t,
    vars,
    config,
    nats: nats.nats,
    store,
    pool,
    runner,
    /** Creates the body's conversation in CONV first (as the gateway would), unless `{ create: false }`. */
    startTask: async (body: unknown, o: { create?: boolean } = {}): Promise<StartTaskReply> => {
      const b = body as { conversationId?: unknown; tenant?: unknown } | null;
      if (o.create !== false && typeof b?.conversationId === 'string' && typeof b.tenant === 'string') await ensureConversation(nats.nats, t, b.conversationId, b.tenant);
      return callRpc(nats.nats.nc, t.rpc.startTask, body, startTaskReplySchema);
    },
    stopTask: (body: { taskId: string; attempt?: number }): Promise<StopTaskReply> => callRpc(nats.nats.nc, t.rpc.stopTask, { tenant: 'acme', userId: 'alice', ...body }, stopTaskReplySchema),
    stopAll: (body: { conversationId: string; epoch: number }): Promise<StopAllReply> => callRpc(nats.nats.nc, t.rpc.stopAll, { tenant: 'acme', userId: 'alice', ...body }, stopAllReplySchema),
    taskEvents: async (taskId: string): Promise<TaskEvent[]> => (await store.read(t.streams.TASKS, t.task(taskId), decodeTaskEvent)).events.map((e) => e.event),
    cmdEvents: async (commandId: string): Promise<SandboxCommandEvent[]> => (await store.read(t.streams.TASKS, t.cmd(commandId), decodeSandboxCommandEvent)).events.map((e) => e.event),
    convEvents: async (conversationId: string): Promise<ConversationEvent[]> => (await store.read(t.streams.CONV, t.conv(conversationId), decodeConversationEvent)).events.map((e) => e.event),
    async waitForTaskEvent<T extends TaskEvent['type']>(taskId: string, type: T, timeoutMs = 30_000): Promise<Extract<TaskEvent, { type: T }>> {
      return (await waitFor(async () => (await s.taskEvents(taskId)).find((e) => e.type === type), timeoutMs, `${type} on ${taskId}`)) as Extract<TaskEvent, { type: T }>;
    },
    async close() {
      await ingestor?.stop();
      ingestor = undefined;
      await runner.stop();
      await pool.end();
      await resources.release();
    },
  };
  return s;
}

export type RealStack = Awaited<ReturnType<typeof realStack>>;
