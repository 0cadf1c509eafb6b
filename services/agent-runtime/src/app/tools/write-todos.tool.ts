import { z } from 'zod';
import { ValidationError } from '@handplane/kernel';
import { validateTaskWaitReplySchema } from '@handplane/contracts';
import type { ConversationRunCommand, TaskStatus, Todo, WaitCheck } from '@handplane/domain';
import { callRpc } from '@handplane/platform';
import { taskStatus } from './task-view';
import type { Tool, ToolContext, ToolDeps } from './tool';

const argsSchema = z.object({
  todos: z
    .array(
      z.object({
        id: z.string().min(1).max(200),
        content: z.string().max(2000),
        status: z.enum(['pending', 'in_progress', 'completed']),
        taskIds: z.array(z.string().max(200)).max(100).optional(),
      }),
    )
    .max(100),
  wait_for_tasks: z.array(z.string().max(200)).max(100).optional(),
});

/**
 * `write_todos(todos, wait_for_tasks)`: replaces the plan and, with `wait_for_tasks`, declares
 * the wait that lets the run suspend. The host validates every waited-for task first (G5: one bad
 * id rejects the whole call); a todo bound to an unfinished task cannot be completed (G4).
 */
export function writeTodosTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(`invalid write_todos arguments: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'args'}: ${i.message}`).join('; ')}`);
    const todos: Todo[] = parsed.data.todos.map((t) => ({ ...t, taskIds: t.taskIds ?? [] }));
    const waitFor = [...new Set(parsed.data.wait_for_tasks ?? [])];
    const validation = waitFor.length ? await validateWait(deps, ctx.conversationId, waitFor) : [];
    if (!Array.isArray(validation)) return { ok: false, result: { error: validation.error }, events: [] };
    const taskStatuses = await statusesOfCompleted(deps, ctx, todos);
    const metadata = { at: ctx.at, actor: ctx.userId };
    const commands: ConversationRunCommand[] = [{ type: 'UpdateTodos', data: { runId: ctx.runId, todos, waitForTasks: waitFor, taskStatuses }, metadata }];
    if (waitFor.length) commands.push({ type: 'DeclareWait', data: { runId: ctx.runId, taskIds: waitFor, validation }, metadata });
    const events = ctx.decide(commands);
    const updated = events.find((e) => e.type === 'todos.updated');
    return { ok: true, result: { todos: updated?.type === 'todos.updated' ? updated.data.todos : todos, waitForTasks: waitFor }, events: [] };
  };
}

async function validateWait(deps: ToolDeps, conversationId: string, taskIds: string[]): Promise<WaitCheck[] | { error: { code: string; message: string } }> {
  const reply = await callRpc(deps.nats.nc, deps.topology.rpc.validateTaskWait, { conversationId, taskIds }, validateTaskWaitReplySchema);
  if (!reply.ok) return { error: reply.error };
  return reply.results.map((r) => ({ taskId: r.taskId, valid: r.valid, ...(r.reason ? { reason: r.reason } : {}) }));
}

/** Status of every task bound (explicitly or, per the snapshot, implicitly) to a todo marked completed. */
async function statusesOfCompleted(deps: ToolDeps, ctx: ToolContext, todos: Todo[]): Promise<Record<string, TaskStatus | 'unknown'>> {
  const before = new Map(ctx.snapshot.todos.map((t) => [t.id, t.taskIds]));
  const ids = new Set(todos.filter((t) => t.status === 'completed').flatMap((t) => [...t.taskIds, ...(before.get(t.id) ?? [])]));
  const out: Record<string, TaskStatus | 'unknown'> = {};
  for (const id of ids) out[id] = await taskStatus(deps.nats, deps.topology, id);
  return out;
}
