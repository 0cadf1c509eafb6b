import { z } from 'zod';
import type { ConversationEvent } from '@handplane/domain';
import { eventSchema, type DistributiveOmit } from './envelope';
import { taskReceiptSchema } from './task.schemas';
import { waitUntilSchema } from './wait-conditions';

const todo = z.object({
  id: z.string(),
  content: z.string(),
  status: z.enum(['pending', 'in_progress', 'completed']),
  taskIds: z.array(z.string()),
});
const nullableInt = z.number().int().nullable();
const n = z.number().int().nonnegative();

/**
 * `task.stopping` v1 (as first published) said only what and why; v2 also says which attempt and who
 * asked (the audit's "under which identity"). v1 events stay in the log as written and are upcast on
 * read (`upcasters.ts`): `requestedBy` from the event's actor, `attempt` unknown (null).
 */
export const taskStoppingV1 = z.object({ taskId: z.string(), commandId: z.string(), reason: z.string() });
export const taskStoppingV2 = z.object({ taskId: z.string(), commandId: z.string(), attempt: n.nullable(), reason: z.string(), requestedBy: z.string() });

/** Events of the conversation (`conv.<conversationId>` in CONV); their types are the SSE event names. */
export const conversationEventSchema = z.discriminatedUnion('type', [
  eventSchema('conversation.created', 1, z.object({ conversationId: z.string(), tenant: z.string(), title: z.string(), createdBy: z.string() })),
  eventSchema('member.added', 1, z.object({ conversationId: z.string(), userId: z.string(), addedBy: z.string() })),
  eventSchema('message.user', 1, z.object({ messageId: z.string(), userId: z.string(), text: z.string(), clientMessageId: z.string().optional() })),
  eventSchema(
    'run.started',
    1,
    z.object({
      runId: z.string(),
      userId: z.string(),
      trigger: z.enum(['message', 'task_event', 'answer', 'approval']),
      taskId: z.string().optional(),
      messageId: z.string().optional(),
      questionId: z.string().optional(),
      approvalId: z.string().optional(),
    }),
  ),
  eventSchema('run.finished', 1, z.object({ runId: z.string(), outcome: z.enum(['completed', 'waiting', 'stopped', 'failed']), detail: z.string().optional() })),
  eventSchema('assistant.message', 1, z.object({ runId: z.string(), text: z.string() })),
  eventSchema('tool.called', 1, z.object({ runId: z.string(), callId: z.string(), name: z.string(), args: z.unknown() })),
  eventSchema('tool.result', 1, z.object({ runId: z.string(), callId: z.string(), name: z.string(), ok: z.boolean(), result: z.unknown() })),
  eventSchema('todos.updated', 1, z.object({ runId: z.string().optional(), todos: z.array(todo), waitForTasks: z.array(z.string()) })),
  eventSchema('wait.declared', 1, z.object({ runId: z.string(), taskIds: z.array(z.string()) })),
  eventSchema('wait.invalidated', 1, z.object({ reason: z.string(), runId: z.string().optional(), taskIds: z.array(z.string()).optional() })),
  eventSchema('guard.rejected', 1, z.object({ runId: z.string().optional(), rule: z.string(), detail: z.string() })),
  eventSchema('approval.requested', 1, z.object({ approvalId: z.string(), runId: z.string(), command: z.string(), reason: z.string() })),
  eventSchema(
    'approval.resolved',
    1,
    z.object({ approvalId: z.string(), decision: z.enum(['approve', 'reject']), by: z.string(), automated: z.boolean() }),
  ),
  eventSchema('question.asked', 1, z.object({ questionId: z.string(), runId: z.string(), text: z.string() })),
  eventSchema('question.answered', 1, z.object({ questionId: z.string(), text: z.string(), by: z.string() })),
  eventSchema('command.output', 1, z.object({ taskId: z.string(), commandId: z.string(), offset: n, text: z.string(), bytes: n })),
  eventSchema(
    'task.started',
    1,
    z.object({ taskId: z.string(), commandId: z.string(), attempt: n, runnerId: z.string(), userId: z.string(), command: z.string() }),
  ),
  eventSchema('task.backgrounded', 1, z.object({ taskId: z.string(), commandId: z.string() })),
  eventSchema('task.stopping', 2, taskStoppingV2),
  eventSchema(
    'task.finished',
    1,
    z.object({ taskId: z.string(), commandId: z.string(), status: z.string(), exitCode: nullableInt, signal: z.string().nullable(), receipt: taskReceiptSchema.optional() }),
  ),
  eventSchema('task.result', 1, z.object({ taskId: z.string(), commandId: z.string(), resultState: z.string(), outputBytes: n })),
  eventSchema(
    'task.internal_event',
    1,
    z.object({
      taskId: z.string(),
      commandId: z.string(),
      attempt: n,
      userId: z.string(),
      origin: z.enum(['user', 'agent']),
      runId: z.string().optional(),
      status: z.string(),
      exitCode: nullableInt,
      signal: z.string().nullable(),
      resultState: z.string(),
      outputBytes: n,
      receipt: taskReceiptSchema.optional(),
    }),
  ),
  eventSchema(
    'task.condition_met',
    1,
    z.object({
      conditionId: z.string(),
      taskId: z.string(),
      commandId: z.string(),
      attempt: n,
      userId: z.string(),
      runId: z.string(),
      until: waitUntilSchema,
      outcome: z.enum(['matched', 'timed_out']),
      line: z.string().optional(),
      offset: n.optional(),
      detail: z.string(),
    }),
  ),
  eventSchema(
    'epoch.ended',
    1,
    z.object({
      epoch: n,
      nextEpoch: n,
      stoppedTaskIds: z.array(z.string()),
      stoppedTasks: z.array(z.object({ taskId: z.string(), attempt: n })),
      by: z.string(),
    }),
  ),
  eventSchema(
    'task.stdin',
    1,
    z.object({ taskId: z.string(), commandId: z.string(), attempt: n, by: z.string(), via: z.enum(['user', 'agent']), bytes: n, sha256: z.string(), closed: z.boolean() }),
  ),
  eventSchema('task.awaiting_input', 1, z.object({ taskId: z.string(), commandId: z.string(), attempt: n, offset: n, prompt: z.string() })),
]);

// Compile-time proof that every wire event is a domain event.
const agrees = (e: DistributiveOmit<z.infer<typeof conversationEventSchema>, 'v'>): ConversationEvent => e;
void agrees;
