import { z } from 'zod';
import type { SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { eventSchema, type DistributiveOmit } from './envelope';

const terminal = z.enum(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);
const nonNegInt = z.number().int().nonnegative();

const stopReason = z.enum(['user', 'deadline', 'stop_all', 'policy']);

/** How a task ended (issue 10.4; see TaskReceipt in the domain). */
export const taskReceiptSchema = z.object({
  outcome: z.enum(['exited', 'killed', 'lost', 'not_started', 'unknown']),
  status: terminal,
  exitCode: z.number().int().nullable(),
  signal: z.string().nullable(),
  requestedBy: z.object({ reason: stopReason, by: z.string(), at: z.string(), detail: z.string().optional() }).nullable(),
  summary: z.string(),
  evidence: z.object({
    runnerId: z.string().nullable(),
    epoch: nonNegInt,
    attempt: nonNegInt,
    startedAt: z.string().nullable(),
    finishedAt: z.string(),
    outputBytes: nonNegInt,
    resultState: z.enum(['readable', 'unavailable']),
    exitReason: z.string().nullable(),
    startFailure: z.string().optional(),
  }),
});

/** Events of the task aggregate (`task.<taskId>` in TASKS). */
export const taskEventSchema = z.discriminatedUnion('type', [
  eventSchema(
    'TaskRegistered',
    1,
    z.object({
      taskId: z.string(),
      commandId: z.string(),
      conversationId: z.string(),
      tenant: z.string(),
      userId: z.string(),
      origin: z.enum(['user', 'agent']),
      runId: z.string().optional(),
      command: z.string(),
      cwd: z.string(),
      env: z.record(z.string(), z.string()),
      epoch: nonNegInt,
      attempt: nonNegInt,
      foregroundWindowMs: nonNegInt,
      timeoutMs: nonNegInt,
      registeredAt: z.string(),
    }),
  ),
  eventSchema('TaskStarted', 1, z.object({ taskId: z.string(), commandId: z.string(), attempt: nonNegInt, runnerId: z.string(), startedAt: z.string() })),
  eventSchema('TaskStartFailed', 1, z.object({ taskId: z.string(), commandId: z.string(), attempt: nonNegInt, reason: z.string(), failedAt: z.string() })),
  eventSchema('TaskBackgrounded', 1, z.object({ taskId: z.string(), commandId: z.string(), attempt: nonNegInt, backgroundedAt: z.string() })),
  eventSchema(
    'TaskStopRequested',
    1,
    z.object({
      taskId: z.string(),
      commandId: z.string(),
      attempt: nonNegInt,
      epoch: nonNegInt,
      reason: stopReason,
      requestedBy: z.string(),
      requestedAt: z.string(),
      detail: z.string().optional(),
    }),
  ),
  eventSchema(
    'TaskStopSignalled',
    1,
    z.object({
      taskId: z.string(),
      commandId: z.string(),
      attempt: nonNegInt,
      runnerId: z.string(),
      outcome: z.enum(['delivered', 'already_exited']),
      signalledAt: z.string(),
    }),
  ),
  eventSchema(
    'TaskRetried',
    1,
    z.object({
      taskId: z.string(),
      previousCommandId: z.string(),
      previousAttempt: nonNegInt,
      commandId: z.string(),
      attempt: nonNegInt,
      reason: z.string(),
      retriedAt: z.string(),
    }),
  ),
  eventSchema(
    'TaskFinished',
    1,
    z.object({
      taskId: z.string(),
      commandId: z.string(),
      attempt: nonNegInt,
      status: terminal,
      exitCode: z.number().int().nullable(),
      signal: z.string().nullable(),
      resultState: z.enum(['readable', 'unavailable']),
      outputBytes: nonNegInt,
      finishedAt: z.string(),
      receipt: taskReceiptSchema.optional(),
    }),
  ),
]);

/**
 * The range of output the log ingestor dropped because it passed OUTPUT_CAP_BYTES (an optional field
 * added to v1: older readers ignore it, older events have none).
 */
const truncationSchema = z.object({ droppedFrom: nonNegInt, droppedTo: nonNegInt, droppedBytes: nonNegInt });

/** Events of the SandboxCommand aggregate (`cmd.<commandId>` in TASKS). */
export const sandboxCommandEventSchema = z.discriminatedUnion('type', [
  eventSchema(
    'CommandExited',
    1,
    z.object({
      commandId: z.string(),
      taskId: z.string(),
      attempt: nonNegInt,
      runnerId: z.string(),
      exitCode: z.number().int().nullable(),
      signal: z.string().nullable(),
      endOffset: nonNegInt,
      startedAt: z.string(),
      finishedAt: z.string(),
      reason: z.string(),
    }),
  ),
  eventSchema('CommandResultReadable', 1, z.object({ commandId: z.string(), taskId: z.string(), attempt: nonNegInt, outputBytes: nonNegInt, truncation: truncationSchema.optional() })),
  eventSchema(
    'CommandResultUnavailable',
    1,
    z.object({ commandId: z.string(), taskId: z.string(), attempt: nonNegInt, durableBytes: nonNegInt, reason: z.string(), truncation: truncationSchema.optional() }),
  ),
  eventSchema(
    'CommandResultDelivered',
    1,
    z.object({ commandId: z.string(), taskId: z.string(), attempt: nonNegInt, deliveredTo: z.enum(['agent', 'user']) }),
  ),
]);

// Compile-time proof that every wire event is a domain event.
const taskAgrees = (e: DistributiveOmit<z.infer<typeof taskEventSchema>, 'v'>): TaskEvent => e;
const cmdAgrees = (e: DistributiveOmit<z.infer<typeof sandboxCommandEventSchema>, 'v'>): SandboxCommandEvent => e;
void taskAgrees;
void cmdAgrees;
