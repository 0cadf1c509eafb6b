import { z } from 'zod';
import { stopAllReplySchema, stopTaskReplySchema, type StopAllRequest, type StopTaskRequest } from '@handplane/contracts';
import { callRpc } from '@handplane/platform';
import { requireConversation } from './conversation-read';
import { query } from './db';
import type { GatewayResources, Principal } from './resources';
import { fromRpcError } from './rpc-errors';
import { requireTask } from './task-read';
import { parseInput } from './validate';

const stopTaskSchema = z.object({ attempt: z.number().int().nonnegative().optional() }).strict();
const stopAllSchema = z.object({ epoch: z.number().int().nonnegative().optional() }).strict();

/** Stop one task, or everything of a conversation (DESIGN.md §6–7). */
export interface StopsApp {
  /** `stopping` until the runner proves the exit; a task already finished answers its terminal status. */
  stopTask(p: Principal, taskId: string, body: unknown): Promise<{ status: string; attempt: number }>;
  /** Ends the conversation's current epoch (or `body.epoch`, the one the caller saw). */
  stopAll(p: Principal, conversationId: string, body: unknown): Promise<{ epoch: number; stopping: string[] }>;
}

export function stopsApp(r: GatewayResources): StopsApp {
  // Read-your-writes for stop-all: the conversation view shows the new epoch before we answer,
  // best effort (the stop has happened either way; a retry would stop nothing more).
  const epochVisible = async (conversationId: string, epoch: number) => {
    const until = r.clock.monotonicMs() + r.projectionWaitMs;
    while (r.clock.monotonicMs() < until) {
      const rows = await query<{ epoch: number }>(r.pool, 'SELECT epoch FROM conversations WHERE id = $1', [conversationId]);
      if ((rows[0]?.epoch ?? 0) >= epoch) return;
      await new Promise((res) => setTimeout(res, 20));
    }
    r.logger.warn({ conversationId, epoch }, 'stop-all answered before the conversation view showed the new epoch');
  };

  return {
    async stopTask(p, taskId, body) {
      // Membership first: a task of a conversation the caller is not in is "not found", whatever the coordinator knows.
      await requireTask(r.pool, p, taskId);
      const input = parseInput(stopTaskSchema, body);
      const request: StopTaskRequest = { tenant: p.tenant, userId: p.userId, taskId, reason: 'user', ...(input.attempt === undefined ? {} : { attempt: input.attempt }) };
      const reply = await callRpc(r.nats.nc, r.topology.rpc.stopTask, request, stopTaskReplySchema, r.rpcTimeoutMs);
      if (!reply.ok) throw fromRpcError(reply.error, 'the coordinator could not stop the task');
      return { status: reply.status, attempt: reply.attempt };
    },

    async stopAll(p, conversationId, body) {
      const conv = await requireConversation(r.pool, p, conversationId);
      const input = parseInput(stopAllSchema, body);
      const request: StopAllRequest = { tenant: p.tenant, userId: p.userId, conversationId, epoch: input.epoch ?? conv.epoch };
      const reply = await callRpc(r.nats.nc, r.topology.rpc.stopAll, request, stopAllReplySchema, r.rpcTimeoutMs);
      if (!reply.ok) throw fromRpcError(reply.error, 'the coordinator could not stop the conversation');
      await epochVisible(conversationId, reply.epoch);
      return { epoch: reply.epoch, stopping: reply.stopping };
    },
  };
}
