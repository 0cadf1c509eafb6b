import { createHash } from 'node:crypto';
import { z } from 'zod';
import { Unavailable } from '@handplane/kernel';
import { commandInputSchema, markDeliveredReplySchema, startTaskReplySchema, type StartTaskRequest } from '@handplane/contracts';
import { callRpc, waitForProjection } from '@handplane/platform';
import { requireConversation } from './conversation-read';
import { guardDb } from './db';
import { readOutput, type OutputSlice } from './output';
import { fromRpcError } from './rpc-errors';
import { TASKS_PROJECTION, type GatewayResources, type Principal } from './resources';
import { parseTaskFilter } from './task-filter';
import { requireTask, tasksOf, toTaskView, visibleTasks, type TaskView } from './task-read';
import { parseInput } from './validate';

export { fromRpcError } from './rpc-errors';

/** `GET /v1/tasks/overdue`: `count` is meant for dashboards and alerts. */
export interface OverdueReport {
  at: string;
  graceMs: number;
  count: number;
  tasks: TaskView[];
}

const DEFAULT_OVERDUE_GRACE_MS = 60_000;

/** The task use cases (DESIGN.md §7). */
export interface TasksApp {
  startCommand(p: Principal, conversationId: string, body: unknown, idempotencyKey?: string): Promise<{ taskId: string; commandId: string }>;
  list(p: Principal, conversationId: string): Promise<TaskView[]>;
  /** The registry: every task the caller may see, filtered by `?status=&conversation=&user=&overdue=&awaiting=&limit=`. */
  registry(p: Principal, q: { status?: unknown; conversation?: unknown; user?: unknown; overdue?: unknown; awaiting?: unknown; limit?: unknown }): Promise<TaskView[]>;
  /** The overdue report: unfinished tasks past their deadline plus the grace that the caller may see, and how many. */
  overdue(p: Principal): Promise<OverdueReport>;
  get(p: Principal, taskId: string): Promise<TaskView>;
  output(p: Principal, taskId: string, offset: unknown): Promise<OutputSlice>;
}

// The coordinator derives the task id from (tenant, requestId); scoping the client's key to the
// caller and conversation keeps two users' keys from naming the same task.
const requestIdOf = (p: Principal, conversationId: string, key: string) =>
  `k-${createHash('sha256').update([p.tenant, p.userId, conversationId, key].join('\0')).digest('hex')}`;

export function tasksApp(r: GatewayResources): TasksApp {
  const overdueWindow = () => ({ now: r.clock.now(), graceMs: r.overdueGraceMs ?? DEFAULT_OVERDUE_GRACE_MS });
  return {
    async startCommand(p, conversationId, body, idempotencyKey) {
      const conv = await requireConversation(r.pool, p, conversationId);
      const input = parseInput(commandInputSchema, body);
      const key = idempotencyKey === undefined ? undefined : parseInput(z.string().min(1).max(200), idempotencyKey, 'Idempotency-Key');
      const request: StartTaskRequest = {
        requestId: key ? requestIdOf(p, conversationId, key) : r.newId(),
        conversationId,
        tenant: p.tenant,
        userId: p.userId,
        origin: 'user',
        epoch: conv.epoch,
        input,
      };
      const reply = await callRpc(r.nats.nc, r.topology.rpc.startTask, request, startTaskReplySchema, r.rpcTimeoutMs);
      if (!reply.ok) throw fromRpcError(reply.error, 'the coordinator could not start the task');
      const visible = await guardDb(() => waitForProjection(r.pool, TASKS_PROJECTION, reply.seq, r.projectionWaitMs));
      // Registered, but our read model cannot show it: say so rather than answer a task nobody can read yet.
      if (!visible) throw new Unavailable(`task ${reply.taskId} was registered but is not visible yet; retry with the same Idempotency-Key`);
      return { taskId: reply.taskId, commandId: reply.commandId };
    },

    async list(p, conversationId) {
      await requireConversation(r.pool, p, conversationId);
      return (await tasksOf(r.pool, p.tenant, conversationId)).map(toTaskView);
    },

    registry: async (p, q) => (await visibleTasks(r.pool, p, parseTaskFilter(q, overdueWindow()))).map(toTaskView),

    async overdue(p) {
      const w = overdueWindow();
      const tasks = (await visibleTasks(r.pool, p, { overdue: w, limit: 1000 })).map(toTaskView);
      return { at: w.now.toISOString(), graceMs: w.graceMs, count: tasks.length, tasks };
    },

    get: async (p, taskId) => toTaskView(await requireTask(r.pool, p, taskId)),

    async output(p, taskId, offset) {
      const task = await requireTask(r.pool, p, taskId);
      const slice = await readOutput(r.pool, task, offset);
      // A person's own command: serving its last byte hands the result over. Best effort; the
      // response never depends on it, and a repeat appends nothing.
      if (slice.complete && slice.resultState === 'readable' && task.origin === 'user') {
        callRpc(r.nats.nc, r.topology.rpc.markDelivered, { commandId: task.command_id, deliveredTo: 'user' }, markDeliveredReplySchema, r.rpcTimeoutMs)
          .then((reply) => {
            if (!reply.ok) r.logger.warn({ taskId, code: reply.error.code }, 'mark-delivered refused');
          })
          .catch((err: unknown) => r.logger.warn({ taskId, err: String(err) }, 'mark-delivered failed'));
      }
      return slice;
    },
  };
}
