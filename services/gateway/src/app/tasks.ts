import { createHash } from 'node:crypto';
import { z } from 'zod';
import { Conflict, IllegalState, NotFound, Unavailable, ValidationError, type DomainError } from '@handplane/kernel';
import { commandInputSchema, startTaskReplySchema, type RpcError, type StartTaskRequest } from '@handplane/contracts';
import { callRpc, waitForProjection } from '@handplane/platform';
import { requireConversation } from './conversation-read';
import { guardDb } from './db';
import { readOutput, type OutputSlice } from './output';
import { TASKS_PROJECTION, type GatewayResources, type Principal } from './resources';
import { requireTask, tasksOf, toTaskView, type TaskView } from './task-read';
import { parseInput } from './validate';

/** The task use cases (DESIGN.md §7). */
export interface TasksApp {
  startCommand(p: Principal, conversationId: string, body: unknown, idempotencyKey?: string): Promise<{ taskId: string; commandId: string }>;
  list(p: Principal, conversationId: string): Promise<TaskView[]>;
  get(p: Principal, taskId: string): Promise<TaskView>;
  output(p: Principal, taskId: string, offset: unknown): Promise<OutputSlice>;
}

/** The coordinator's `{code, message}` back as the domain error it stands for (mapped to HTTP in one place). */
export function fromRpcError(e: RpcError): DomainError {
  switch (e.code) {
    case 'validation':
      return new ValidationError(e.message, [e.message]);
    case 'not_found':
      return new NotFound(e.message);
    case 'conflict':
      return new Conflict(e.message);
    case 'illegal_state':
      return new IllegalState(e.message);
    default:
      return new Unavailable(`the coordinator could not start the task: ${e.message}`);
  }
}

// The coordinator derives the task id from (tenant, requestId); scoping the client's key to the
// caller and conversation keeps two users' keys from naming the same task.
const requestIdOf = (p: Principal, conversationId: string, key: string) =>
  `k-${createHash('sha256').update([p.tenant, p.userId, conversationId, key].join('\0')).digest('hex')}`;

export function tasksApp(r: GatewayResources): TasksApp {
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
      if (!reply.ok) throw fromRpcError(reply.error);
      const visible = await guardDb(() => waitForProjection(r.pool, TASKS_PROJECTION, reply.seq, r.projectionWaitMs));
      // Registered, but our read model cannot show it: say so rather than answer a task nobody can read yet.
      if (!visible) throw new Unavailable(`task ${reply.taskId} was registered but is not visible yet; retry with the same Idempotency-Key`);
      return { taskId: reply.taskId, commandId: reply.commandId };
    },

    async list(p, conversationId) {
      await requireConversation(r.pool, p, conversationId);
      return (await tasksOf(r.pool, p.tenant, conversationId)).map(toTaskView);
    },

    get: async (p, taskId) => toTaskView(await requireTask(r.pool, p, taskId)),

    async output(p, taskId, offset) {
      const task = await requireTask(r.pool, p, taskId);
      return readOutput(r.pool, task, offset);
    },
  };
}
