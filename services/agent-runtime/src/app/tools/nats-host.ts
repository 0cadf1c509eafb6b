import type { Pool } from 'pg';
import { markDeliveredReplySchema, startTaskReplySchema, stopTaskReplySchema, validateTaskWaitReplySchema, writeStdinReplySchema, type Topology } from '@handplane/contracts';
import { callRpc, type EventStore, type Logger, type Nats } from '@handplane/platform';
import { conversationInfo, markResultRead } from '../run/queue';
import { readCommandLog } from './command-log';
import type { HostPort } from './host';
import { readTask, taskStatus, watchTask } from './task-view';

/** The host over NATS (coordinator RPCs, the TASKS stream) and Postgres (read models, Command Log, wake-ups). */
export function natsHost(d: { nats: Nats; topology: Topology; store: EventStore; pool: Pool; logger?: Logger }): HostPort {
  const { nats, topology: t, pool } = d;
  return {
    conversation: (conversationId) => conversationInfo(pool, conversationId),
    startTask: (req) => callRpc(nats.nc, t.rpc.startTask, req, startTaskReplySchema),
    validateWait: (conversationId, taskIds, c) =>
      callRpc(nats.nc, t.rpc.validateTaskWait, { conversationId, taskIds: [...taskIds], ...(c ? { runId: c.runId, conditions: [...c.conditions] } : {}) }, validateTaskWaitReplySchema),
    stopTask: (req) => callRpc(nats.nc, t.rpc.stopTask, req, stopTaskReplySchema),
    writeStdin: (req) => callRpc(nats.nc, t.rpc.writeStdin, req, writeStdinReplySchema),
    taskStatus: (taskId) => taskStatus(nats, t, taskId),
    readTask: (taskId) => readTask(d.store, t, taskId),
    watchTask: (taskId, done, opts) => watchTask(nats, t, taskId, done, opts),
    readLog: (commandId, offset, cap) => readCommandLog(pool, commandId, offset, cap),
    markResultRead: (r) => markResultRead(pool, r),
    async markDelivered(commandId) {
      // Best effort and never waited for: the agent has the result either way (a missing ingestor
      // must not hold the tool call for the RPC timeout); a repeat appends nothing.
      void callRpc(nats.nc, t.rpc.markDelivered, { commandId, deliveredTo: 'agent' }, markDeliveredReplySchema).then(
        (reply) => {
          if (!reply.ok) d.logger?.warn({ commandId, code: reply.error.code }, 'mark-delivered refused');
        },
        (err: unknown) => d.logger?.warn({ commandId, err: String(err) }, 'mark-delivered failed'),
      );
    },
    async unfinishedTasks(conversationId) {
      const r = await pool.query<{ task_id: string }>(`SELECT task_id FROM tasks WHERE conversation_id = $1 AND status IN ('starting', 'running', 'stopping')`, [conversationId]);
      return r.rows.map((x) => x.task_id);
    },
  };
}
