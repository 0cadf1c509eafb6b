import { isDomainError } from '@handplane/kernel';
import { GuardViolation, type ConversationRunEvent } from '@handplane/domain';
import type { Logger } from '@handplane/platform';
import type { ToolCall } from '../model/transcript';
import { askUserTool } from './ask-user.tool';
import { execTool } from './exec.tool';
import { readOutputTool } from './read-output.tool';
import { stopTaskTool } from './stop-task.tool';
import type { Tool, ToolContext, ToolDeps, ToolOutcome } from './tool';
import { writeStdinTool } from './write-stdin.tool';
import { writeTodosTool } from './write-todos.tool';

/** The tools the model may call, by name. */
export function createTools(deps: ToolDeps): Readonly<Record<string, Tool>> {
  return { exec: execTool(deps), write_todos: writeTodosTool(deps), read_output: readOutputTool(deps), stop_task: stopTaskTool(deps), write_stdin: writeStdinTool(deps), ask_user: askUserTool() };
}

const ATTEMPTS = 4;

/** A fresh context for one attempt of a call, and the events it decided. */
export type ContextFactory = () => { ctx: ToolContext; decided: ConversationRunEvent[] };

/** A call's outcome with the events decided by the attempt that produced it (none when it failed). */
export interface CallOutcome {
  readonly outcome: ToolOutcome;
  readonly decided: readonly ConversationRunEvent[];
}

/**
 * Runs one tool call and turns every refusal into an answer the model can act on: a governance
 * rule becomes `guard.rejected` plus an error result; another domain error an error result.
 * Transient trouble (a retryable error, or an unexpected one) is retried a few times first, each
 * attempt from the same state (decisions of a failed attempt are dropped); an interrupted run
 * throws, so the call is redone when the run resumes.
 */
export async function callTool(tools: Readonly<Record<string, Tool>>, call: ToolCall, makeContext: ContextFactory, logger: Logger): Promise<CallOutcome> {
  const tool = tools[call.name];
  if (!tool) return { outcome: failure('not_found', `unknown tool ${call.name}; the tools are ${Object.keys(tools).join(', ')}`), decided: [] };
  if (typeof call.args.__invalid_json === 'string') return { outcome: failure('validation', `the arguments of ${call.name} are not valid JSON; call it again with a JSON object`), decided: [] };
  for (let attempt = 1; ; attempt++) {
    const { ctx, decided } = makeContext();
    try {
      const outcome = await tool(call.args, ctx);
      return { outcome, decided };
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      if (e instanceof GuardViolation) {
        const event = { type: 'guard.rejected' as const, data: { runId: ctx.runId, rule: e.rule, detail: e.message }, metadata: { at: ctx.at, actor: ctx.userId } };
        return { outcome: { ok: false, result: { error: { code: 'guard_rejected', rule: e.rule, message: e.message } }, events: [event] }, decided: [] };
      }
      const transient = !isDomainError(e) || e.retryable;
      if (!transient) return { outcome: failure(e.code, e.message), decided: [] };
      if (attempt >= ATTEMPTS) return { outcome: failure(isDomainError(e) ? e.code : 'internal', `${call.name} failed: ${(e as Error).message}`), decided: [] };
      logger.warn({ err: e, tool: call.name, callId: call.callId, attempt }, 'tool call failed; retrying');
      await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    }
  }
}

function failure(code: string, message: string): ToolOutcome {
  return { ok: false, result: { error: { code, message } }, events: [] };
}
