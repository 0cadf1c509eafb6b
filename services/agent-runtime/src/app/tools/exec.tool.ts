import { NotFound, Unavailable, ValidationError } from '@handplane/kernel';
import { commandInputSchema, type CommandInput } from '@handplane/contracts';
import { checkTaskLaunch, isTerminalTaskStatus } from '@handplane/domain';
import { decideApproval } from '../approval/approval-policy';
import { checkDetachment, checkPolling } from '../guards/guards';
import type { ExecAwaitingApproval, ExecBackgrounded, ExecFinished } from '../model/transcript';
import { displayText, utf8SafeStart } from './command-log';
import { runningTasks, stableId } from './history';
import { invalidArgs, type Tool, type ToolContext, type ToolDeps, type ToolOutcome } from './tool';

/** Bytes of output an `exec` result carries (the tail); the rest is read with `read_output`. */
export const EXEC_OUTPUT_TAIL = 8 * 1024;
/** How long after the foreground window `exec` waits for the coordinator's verdict. */
const VERDICT_GRACE_MS = 30_000;

const ok = (result: unknown): ToolOutcome => ({ ok: true, result, events: [] });

/**
 * `exec(command, cwd?, env?, timeoutMs?)`. Before anything runs: G2 (no detachment, parsed with a
 * real shell parser), G3 (no polling while a task runs in the background), G4 (the todo it binds
 * to is not completed) and the approval policy (G7: a person's approval ends the turn). Then it
 * starts a task through the coordinator and follows it until it finishes (exit code and the
 * output's tail) or is backgrounded at the end of the foreground window (G1: `running_in_background`).
 * The request id is derived from the run and the call, so a redone call answers the same task.
 */
export function execTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const input = commandInputSchema.safeParse(args);
    if (!input.success) throw new ValidationError(invalidArgs('exec', input.error.issues));
    const { command } = input.data;
    checkDetachment(command);
    checkPolling(command, await runningTasks(deps.host, ctx.conversationId, ctx.history));
    // The task binds to the todo the model saw in progress when it asked for the command (G4).
    const todoId = ctx.snapshot.todos.find((t) => t.status === 'in_progress')?.id;
    checkTaskLaunch(ctx.state(), ctx.runId, todoId);
    const pending = ctx.approvalId ? undefined : requestApproval(deps, ctx, command);
    if (pending) return ok(pending);
    return run(deps, ctx, input.data, todoId);
  };
}

/** Asks the policy; a person's approval ends the call here (the decision starts the next turn). */
function requestApproval(deps: ToolDeps, ctx: ToolContext, command: string): ExecAwaitingApproval | undefined {
  const decision = decideApproval(deps.approvalPolicy, command);
  if (decision.kind === 'none') return undefined;
  const approvalId = stableId('apr', ctx.runId, ctx.callId);
  const automated = decision.kind === 'automated';
  ctx.decide([{ type: 'RequestApproval', data: { runId: ctx.runId, approvalId, command, reason: decision.reason, automated }, metadata: { at: ctx.at, actor: ctx.userId } }]);
  if (automated) return undefined;
  const message = `A person must approve this command (${decision.reason}). End your turn now: the decision starts your next turn, and an approved command runs then.`;
  return { status: 'approval_pending', approvalId, command, message };
}

async function run(deps: ToolDeps, ctx: ToolContext, input: CommandInput, todoId: string | undefined): Promise<ToolOutcome> {
  const host = deps.host;
  const conv = await host.conversation(ctx.conversationId);
  if (!conv) throw new NotFound(`conversation ${ctx.conversationId} is not known yet`);
  const reply = await host.startTask({ requestId: `${ctx.runId}:${ctx.callId}`, conversationId: ctx.conversationId, tenant: conv.tenant, userId: ctx.userId, origin: 'agent', runId: ctx.runId, epoch: conv.epoch, input });
  if (!reply.ok) return { ok: false, result: { error: reply.error }, events: [] };
  const { taskId } = reply;
  ctx.decide([{ type: 'RecordTaskLaunch', data: { runId: ctx.runId, taskId, ...(todoId ? { todoId } : {}) }, metadata: { at: ctx.at, actor: ctx.userId } }]);
  const v = await host.watchTask(taskId, (t) => isTerminalTaskStatus(t.status) || t.background, { timeoutMs: deps.foregroundWindowMs + VERDICT_GRACE_MS, signal: ctx.signal });
  if (ctx.signal.aborted) throw new Unavailable('the run was interrupted');
  if (!v) {
    const message = `task ${taskId} neither finished nor went to the background in time; it may still be running: declare wait_for_tasks ["${taskId}"]`;
    return { ok: false, result: { taskId, error: { code: 'unavailable', message } }, events: [] };
  }
  if (!isTerminalTaskStatus(v.status)) {
    const result: ExecBackgrounded = { taskId, commandId: v.commandId, status: 'running_in_background', attempt: v.attempt };
    return ok(result);
  }
  const from = Math.max(0, v.outputBytes - EXEC_OUTPUT_TAIL);
  const { bytes } = await host.readLog(v.commandId, from, EXEC_OUTPUT_TAIL);
  const tail = bytes.subarray(from > 0 ? utf8SafeStart(bytes) : 0);
  await host.markResultRead({ conversationId: ctx.conversationId, taskId, attempt: v.attempt, userId: ctx.userId, runId: ctx.runId });
  // The whole result fits the tail: the agent has been handed all of it.
  if (from === 0 && v.resultState === 'readable') await host.markDelivered(v.commandId);
  const result: ExecFinished = { taskId, commandId: v.commandId, status: v.status, exitCode: v.exitCode, signal: v.signal, output: displayText(tail), outputBytes: v.outputBytes, truncated: from > 0, ...(v.receipt ? { receipt: v.receipt } : {}) };
  return ok(result);
}
