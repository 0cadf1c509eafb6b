import { isDomainError } from '@handplane/kernel';
import { GuardViolation } from '@handplane/domain';
import type { Logger } from '@handplane/platform';
import type { ToolCall } from '../model/transcript';
import { execTool } from './exec.tool';
import { readOutputTool } from './read-output.tool';
import type { Tool, ToolContext, ToolDeps, ToolOutcome } from './tool';
import { writeTodosTool } from './write-todos.tool';

/** The tools the model may call, by name. */
export function createTools(deps: ToolDeps): Readonly<Record<string, Tool>> {
  return { exec: execTool(deps), write_todos: writeTodosTool(deps), read_output: readOutputTool(deps) };
}

const ATTEMPTS = 4;

/**
 * Runs one tool call and turns every refusal into an answer the model can act on: a governance
 * rule becomes `guard.rejected` plus an error result; another domain error an error result.
 * Transient trouble (a retryable error, or an unexpected one) is retried a few times first; an
 * interrupted run throws, so the call is redone when the run resumes.
 */
export async function callTool(tools: Readonly<Record<string, Tool>>, call: ToolCall, ctx: ToolContext, logger: Logger): Promise<ToolOutcome> {
  const tool = tools[call.name];
  if (!tool) return failure('not_found', `unknown tool ${call.name}; the tools are ${Object.keys(tools).join(', ')}`);
  for (let attempt = 1; ; attempt++) {
    try {
      return await tool(call.args, ctx);
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      if (e instanceof GuardViolation) {
        return { ok: false, result: { error: { code: 'guard_rejected', rule: e.rule, message: e.message } }, events: [{ type: 'guard.rejected', data: { runId: ctx.runId, rule: e.rule, detail: e.message }, metadata: { at: ctx.at, actor: ctx.userId } }] };
      }
      const transient = !isDomainError(e) || e.retryable;
      if (!transient) return failure(e.code, e.message);
      if (attempt >= ATTEMPTS) return failure(isDomainError(e) ? e.code : 'internal', `${call.name} failed: ${(e as Error).message}`);
      logger.warn({ err: e, tool: call.name, callId: call.callId, attempt }, 'tool call failed; retrying');
      await new Promise((r) => setTimeout(r, 250 * 2 ** attempt));
    }
  }
}

function failure(code: string, message: string): ToolOutcome {
  return { ok: false, result: { error: { code, message } }, events: [] };
}
