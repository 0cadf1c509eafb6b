import { NotFound, Unavailable, ValidationError } from '@handplane/kernel';
import { commandInputSchema, startTaskReplySchema } from '@handplane/contracts';
import { isTerminalTaskStatus } from '@handplane/domain';
import { callRpc } from '@handplane/platform';
import { conversationInfo, markResultRead } from '../run/queue';
import type { ExecBackgrounded, ExecFinished } from '../model/transcript';
import { displayText, readCommandLog, utf8SafeStart } from './command-log';
import { watchTask } from './task-view';
import type { Tool, ToolDeps } from './tool';

/** Bytes of output an `exec` result carries (the tail); the rest is read with `read_output`. */
export const EXEC_OUTPUT_TAIL = 8 * 1024;
/** How long after the foreground window `exec` waits for the coordinator's verdict. */
const VERDICT_GRACE_MS = 30_000;

/**
 * `exec(command, cwd?, env?, timeoutMs?)`: starts a task through the coordinator and follows it
 * until it finishes (result with exit code and the output's tail) or is backgrounded at the end of
 * the foreground window (G1: `running_in_background`). The request id is derived from the run and
 * the call, so a retried call answers the same task instead of starting a second one.
 */
export function execTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const input = commandInputSchema.safeParse(args);
    if (!input.success) throw new ValidationError(`invalid exec arguments: ${input.error.issues.map((i) => `${i.path.join('.') || 'args'}: ${i.message}`).join('; ')}`);
    const conv = await conversationInfo(deps.pool, ctx.conversationId);
    if (!conv) throw new NotFound(`conversation ${ctx.conversationId} is not known yet`);
    const reply = await callRpc(
      deps.nats.nc,
      deps.topology.rpc.startTask,
      { requestId: `${ctx.runId}:${ctx.callId}`, conversationId: ctx.conversationId, tenant: conv.tenant, userId: ctx.userId, origin: 'agent', runId: ctx.runId, epoch: conv.epoch, input: input.data },
      startTaskReplySchema,
    );
    if (!reply.ok) return { ok: false, result: { error: reply.error }, events: [] };
    const { taskId } = reply;
    // The task binds to the todo the model saw in progress when it asked for the command (G4).
    const todoId = ctx.snapshot.todos.find((t) => t.status === 'in_progress')?.id;
    ctx.decide([{ type: 'RecordTaskLaunch', data: { runId: ctx.runId, taskId, ...(todoId ? { todoId } : {}) }, metadata: { at: ctx.at, actor: ctx.userId } }]);
    const v = await watchTask(deps.nats, deps.topology, taskId, (t) => isTerminalTaskStatus(t.status) || t.background, {
      timeoutMs: deps.foregroundWindowMs + VERDICT_GRACE_MS,
      signal: ctx.signal,
    });
    if (ctx.signal.aborted) throw new Unavailable('the run was interrupted');
    if (!v) {
      const message = `task ${taskId} neither finished nor went to the background in time; it may still be running: declare wait_for_tasks ["${taskId}"]`;
      return { ok: false, result: { taskId, error: { code: 'unavailable', message } }, events: [] };
    }
    if (!isTerminalTaskStatus(v.status)) {
      const result: ExecBackgrounded = { taskId, commandId: v.commandId, status: 'running_in_background' };
      return { ok: true, result, events: [] };
    }
    const from = Math.max(0, v.outputBytes - EXEC_OUTPUT_TAIL);
    const { bytes } = await readCommandLog(deps.pool, v.commandId, from, EXEC_OUTPUT_TAIL);
    const tail = bytes.subarray(from > 0 ? utf8SafeStart(bytes) : 0);
    await markResultRead(deps.pool, { conversationId: ctx.conversationId, taskId, attempt: v.attempt, userId: ctx.userId, runId: ctx.runId });
    const result: ExecFinished = {
      taskId,
      commandId: v.commandId,
      status: v.status,
      exitCode: v.exitCode,
      signal: v.signal,
      output: displayText(tail),
      outputBytes: v.outputBytes,
      truncated: from > 0,
    };
    return { ok: true, result, events: [] };
  };
}
