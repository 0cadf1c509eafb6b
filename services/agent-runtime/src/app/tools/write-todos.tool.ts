import { z } from 'zod';
import { ValidationError } from '@handplane/kernel';
import { waitConditionSchema, type WaitCondition } from '@handplane/contracts';
import type { ConversationRunCommand, TaskStatus, Todo, WaitCheck } from '@handplane/domain';
import { invalidArgs, type Tool, type ToolContext, type ToolDeps } from './tool';

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
  /** Task ids, or `{taskId, until, timeoutMs?}` to be woken when a condition holds (issue 10.1). */
  wait_for_tasks: z.array(z.union([z.string().max(200), waitConditionSchema])).max(100).optional(),
});

/**
 * `write_todos(todos, wait_for_tasks)`: replaces the plan and, with `wait_for_tasks`, declares
 * the wait that lets the run suspend. The host validates every waited-for task first (G5: one bad
 * id rejects the whole call); a todo bound to an unfinished task cannot be completed (G4).
 */
export function writeTodosTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(invalidArgs('write_todos', parsed.error.issues));
    const todos: Todo[] = parsed.data.todos.map((t) => ({ ...t, taskIds: t.taskIds ?? [] }));
    const entries = parsed.data.wait_for_tasks ?? [];
    const waitFor = [...new Set(entries.map((e) => (typeof e === 'string' ? e : e.taskId)))];
    // 'exit' is the plain wait: the completion wakes the agent anyway.
    const conditions = entries.filter((e): e is WaitCondition => typeof e !== 'string' && e.until !== 'exit');
    const validation = waitFor.length ? await validateWait(deps, ctx.conversationId, waitFor, conditions.length ? { runId: ctx.runId, conditions } : undefined) : [];
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

async function validateWait(
  deps: ToolDeps,
  conversationId: string,
  taskIds: string[],
  conditions?: { runId: string; conditions: WaitCondition[] },
): Promise<WaitCheck[] | { error: { code: string; message: string } }> {
  const reply = await deps.host.validateWait(conversationId, taskIds, conditions);
  if (!reply.ok) return { error: reply.error };
  return reply.results.map((r) => ({ taskId: r.taskId, valid: r.valid, ...(r.reason ? { reason: r.reason } : {}) }));
}

/**
 * Status of every task bound to a todo marked completed: explicitly, per the snapshot, or per the
 * live state (a task an earlier call of the same response launched, G8). Read live, so a task that
 * finished a moment ago lets its todo complete.
 */
async function statusesOfCompleted(deps: ToolDeps, ctx: ToolContext, todos: Todo[]): Promise<Record<string, TaskStatus | 'unknown'>> {
  const bound = new Map<string, string[]>();
  for (const t of [...ctx.snapshot.todos, ...ctx.state().todos]) bound.set(t.id, [...(bound.get(t.id) ?? []), ...t.taskIds]);
  const ids = new Set(todos.filter((t) => t.status === 'completed').flatMap((t) => [...t.taskIds, ...(bound.get(t.id) ?? [])]));
  const out: Record<string, TaskStatus | 'unknown'> = {};
  for (const id of ids) out[id] = await deps.host.taskStatus(id);
  return out;
}
