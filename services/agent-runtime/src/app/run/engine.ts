import { isDomainError } from '@handplane/kernel';
import { conversationRunDecider as decider, type ConversationRunCommand, type ConversationRunEvent } from '@handplane/domain';
import type { Logger } from '@handplane/platform';
import type { ModelProvider, ToolCall } from '../model/transcript';
import { callTool, type ContextFactory } from '../tools/tools';
import type { Tool, ToolContext } from '../tools/tool';
import type { Checkpoint } from './checkpoint';
import { afterModel, afterToolCall, finishRun, MAX_STEPS_PER_RUN } from './run-steps';

/** What one step of a run needs (no storage: the caller stores the checkpoint it returns). */
export interface EngineDeps {
  readonly model: ModelProvider;
  readonly tools: Readonly<Record<string, Tool>>;
  readonly logger: Logger;
  /** ISO time for the step's events. */
  now(): string;
}

/**
 * One step of the active run: ask the model (when no call is pending), or run the next pending
 * tool call against the response's snapshot (G8). The same function drives the runtime (which
 * stores each checkpoint under the run lease) and the in-memory adversarial suite.
 */
export async function advance(conversationId: string, cp: Checkpoint, d: EngineDeps, signal: AbortSignal): Promise<Checkpoint> {
  const run = cp.active!;
  if (!run.pending) {
    if (run.step >= MAX_STEPS_PER_RUN) return finishRun(cp, d.now(), [], { outcome: 'failed', detail: `the model did not end its turn within ${MAX_STEPS_PER_RUN} responses` });
    let response;
    try {
      response = await d.model.next(cp.transcript, signal);
    } catch (e) {
      // A refused request (bad key, unknown model) does not heal by retrying: the run fails with the reason.
      if (!isDomainError(e) || e.retryable || signal.aborted) throw e;
      return finishRun(cp, d.now(), [], { outcome: 'failed', detail: `the model failed: ${e.message}` });
    }
    return afterModel(cp, response, d.now());
  }
  const call = run.pending.calls[run.pending.done]!;
  const at = d.now();
  const { outcome, decided } = await callTool(d.tools, call, contextFactory(conversationId, cp, call, at, signal), d.logger);
  return afterToolCall(cp, call, outcome, decided, at);
}

/** A fresh context per attempt: decisions apply to the live state in order, reads see the snapshot. */
function contextFactory(conversationId: string, cp: Checkpoint, call: ToolCall, at: string, signal: AbortSignal): ContextFactory {
  const run = cp.active!;
  return () => {
    const decided: ConversationRunEvent[] = [];
    let live = cp.conv;
    const ctx: ToolContext = {
      conversationId,
      runId: run.runId,
      userId: run.userId,
      callId: call.callId,
      at,
      snapshot: run.pending!.snapshot,
      history: cp.transcript,
      ...(call.approvalId ? { approvalId: call.approvalId } : {}),
      signal,
      state: () => live,
      decide(commands: readonly ConversationRunCommand[]) {
        let s = live;
        const out: ConversationRunEvent[] = [];
        for (const command of commands) {
          const events = decider.decide(command, s);
          s = events.reduce((acc, e) => decider.evolve(acc, e), s);
          out.push(...events);
        }
        live = s;
        decided.push(...out);
        return out;
      },
    };
    return { ctx, decided };
  };
}
