import { ROOT_CONTEXT } from '@opentelemetry/api';
import { contextFromTraceparent, inSpan } from '@handplane/platform';

/**
 * Runs a sweep's action on one task (foreground cutover, deadline stop, budget stop) in a span of
 * the trace the task was registered under (`tasks.traceparent`): the command's trace shows what
 * the coordinator did to it later, and the events the action appends carry that trace on. Without
 * a stored trace (tasks registered before it was kept) the span starts a trace of its own.
 */
export function inTaskTrace<T>(name: string, taskId: string, traceparent: string | null, fn: () => Promise<T>): Promise<T> {
  return inSpan('task-coordinator', name, { parent: contextFromTraceparent(traceparent ?? undefined, ROOT_CONTEXT), attributes: { 'hp.task.id': taskId } }, () => fn());
}
