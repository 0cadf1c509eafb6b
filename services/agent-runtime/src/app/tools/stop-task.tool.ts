import { z } from 'zod';
import { NotFound, ValidationError } from '@handplane/kernel';
import { invalidArgs, type Tool, type ToolDeps } from './tool';

const argsSchema = z.object({ taskId: z.string().min(1).max(200), attempt: z.number().int().nonnegative().optional() });

/**
 * `stop_task(taskId, attempt?)`: asks the coordinator to stop a task of this conversation (RPC
 * `stop-task`, fenced by `attempt` when given). The task shows `stopping` until its exit is proven;
 * its completion wakes the agent like any other.
 */
export function stopTaskTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(invalidArgs('stop_task', parsed.error.issues));
    const { taskId, attempt } = parsed.data;
    const task = await deps.host.readTask(taskId);
    if (!task || task.conversationId !== ctx.conversationId) throw new NotFound(`task ${taskId} is not a task of this conversation`);
    const conv = await deps.host.conversation(ctx.conversationId);
    if (!conv) throw new NotFound(`conversation ${ctx.conversationId} is not known yet`);
    const reply = await deps.host.stopTask({ tenant: conv.tenant, userId: ctx.userId, taskId, ...(attempt !== undefined ? { attempt } : {}) });
    if (!reply.ok) return { ok: false, result: { error: reply.error }, events: [] };
    return { ok: true, result: { taskId, status: reply.status, attempt: reply.attempt }, events: [] };
  };
}
