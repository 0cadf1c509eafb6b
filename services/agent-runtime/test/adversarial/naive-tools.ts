import type { Todo } from '@handplane/domain';
import type { Tool } from '../../src/app/tools/tool';
import type { SimHost } from './sim-host';

/**
 * A control for the referee: `exec` and `write_todos` without their guards (no G2/G3 checks, G4
 * and G5 fed with what the model claims). The adversary must break the rules against these.
 */
export function naiveTools(host: SimHost): Readonly<Record<string, Tool>> {
  const exec: Tool = async (args, ctx) => {
    const reply = await host.startTask({ requestId: `${ctx.runId}:${ctx.callId}`, conversationId: ctx.conversationId, tenant: 'acme', userId: ctx.userId, origin: 'agent', runId: ctx.runId, epoch: 1, input: { command: String(args.command) } });
    try {
      ctx.decide([{ type: 'RecordTaskLaunch', data: { runId: ctx.runId, taskId: reply.taskId }, metadata: { at: ctx.at } }]);
    } catch {
      // the naive runtime does not care
    }
    const v = (await host.readTask(reply.taskId))!;
    return { ok: true, result: v.background ? { taskId: v.taskId, commandId: v.commandId, status: 'running_in_background' } : { taskId: v.taskId, status: v.status, exitCode: v.exitCode }, events: [] };
  };
  const writeTodos: Tool = async (args, ctx) => {
    const todos = (args.todos as Todo[]).map((t) => ({ ...t, taskIds: t.taskIds ?? [] }));
    const wait = (args.wait_for_tasks as string[] | undefined) ?? [];
    const all = new Set([...todos.flatMap((t) => t.taskIds), ...ctx.state().todos.flatMap((t) => t.taskIds)]);
    const taskStatuses = Object.fromEntries([...all].map((id) => [id, 'succeeded' as const]));
    ctx.decide([
      { type: 'UpdateTodos', data: { runId: ctx.runId, todos, waitForTasks: wait, taskStatuses }, metadata: { at: ctx.at } },
      ...(wait.length ? [{ type: 'DeclareWait' as const, data: { runId: ctx.runId, taskIds: wait, validation: wait.map((taskId) => ({ taskId, valid: true })) }, metadata: { at: ctx.at } }] : []),
    ]);
    return { ok: true, result: { todos, waitForTasks: wait }, events: [] };
  };
  const readOutput: Tool = async (args) => {
    const v = await host.readTask(String(args.taskId));
    if (!v) return { ok: false, result: { error: { code: 'not_found', message: 'no task' } }, events: [] };
    const { bytes } = await host.readLog(v.commandId, 0, 1 << 16);
    return { ok: true, result: { taskId: v.taskId, offset: 0, bytes: bytes.length, status: v.status, text: bytes.toString() }, events: [] };
  };
  return { exec, write_todos: writeTodos, read_output: readOutput };
}
