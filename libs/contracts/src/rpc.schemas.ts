import { z } from 'zod';
import { waitConditionSchema } from './wait-conditions';

/** Limits that apply wherever a command enters the system. */
export const LIMITS = {
  commandBytes: 64 * 1024,
  envEntries: 256,
  envValueBytes: 32 * 1024,
  cwdBytes: 4096,
} as const;

const envName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A command as a person or the agent submits it (HTTP body and `exec` tool). */
export const commandInputSchema = z
  .object({
    command: z
      .string()
      .refine((s) => s.trim().length > 0, 'command must not be empty')
      .refine((s) => !s.includes('\0'), 'command must not contain NUL')
      .refine((s) => Buffer.byteLength(s) <= LIMITS.commandBytes, `command must be at most ${LIMITS.commandBytes} bytes`),
    cwd: z
      .string()
      .max(LIMITS.cwdBytes)
      .refine((s) => !s.includes('\0'), 'cwd must not contain NUL')
      .refine((s) => !s.split('/').includes('..'), 'cwd must stay inside the workspace (no "..")')
      .optional(),
    env: z
      .record(z.string().regex(envName, 'env names are letters, digits and _'), z.string().max(LIMITS.envValueBytes).refine((s) => !s.includes('\0'), 'env values must not contain NUL'))
      .refine((e) => Object.keys(e).length <= LIMITS.envEntries, `at most ${LIMITS.envEntries} env entries`)
      .optional(),
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();
export type CommandInput = z.infer<typeof commandInputSchema>;

/** Request to the coordinator (NATS request/reply) to register and start a task. */
export const startTaskRequestSchema = z.object({
  /** Idempotency key: a retried request with the same key answers the same task. */
  requestId: z.string().min(1).max(200),
  conversationId: z.string(),
  tenant: z.string(),
  userId: z.string(),
  origin: z.enum(['user', 'agent']),
  runId: z.string().optional(),
  epoch: z.number().int().nonnegative(),
  input: commandInputSchema,
});
export type StartTaskRequest = z.infer<typeof startTaskRequestSchema>;

/** Error shape of every request/reply answer and every HTTP error. */
export const rpcErrorSchema = z.object({ code: z.string(), message: z.string() });
export type RpcError = z.infer<typeof rpcErrorSchema>;

export const startTaskReplySchema = z.union([
  z.object({ ok: z.literal(true), taskId: z.string(), commandId: z.string(), seq: z.number().int() }),
  z.object({ ok: z.literal(false), error: rpcErrorSchema }),
]);
export type StartTaskReply = z.infer<typeof startTaskReplySchema>;

/** `validate_task_wait` (G5): the coordinator answers for each id. */
export const validateTaskWaitRequestSchema = z.object({
  conversationId: z.string(),
  taskIds: z.array(z.string()).max(100),
  /**
   * Condition waits (issue 10.1): each names a task of `taskIds`. When every check passes the
   * coordinator registers them for `runId` and wakes the conversation once per condition.
   */
  conditions: z.array(waitConditionSchema).max(100).optional(),
  runId: z.string().min(1).max(200).optional(),
});
export type ValidateTaskWaitRequest = z.infer<typeof validateTaskWaitRequestSchema>;
export const validateTaskWaitReplySchema = z.union([
  z.object({
    ok: z.literal(true),
    valid: z.boolean(),
    results: z.array(z.object({ taskId: z.string(), valid: z.boolean(), reason: z.string().optional(), status: z.string().optional() })),
  }),
  z.object({ ok: z.literal(false), error: rpcErrorSchema }),
]);
export type ValidateTaskWaitReply = z.infer<typeof validateTaskWaitReplySchema>;

const terminalStatus = z.enum(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/**
 * `stop-task` (POST /v1/tasks/:id/stop): stops one task. `attempt`, when given, fences the request: a
 * stale one answers `conflict` (HTTP 409). The coordinator checks the task's tenant (`not_found`
 * otherwise); the gateway checks conversation membership before calling.
 */
export const stopTaskRequestSchema = z.object({
  tenant: z.string(),
  userId: z.string(),
  taskId: z.string(),
  attempt: z.number().int().nonnegative().optional(),
  reason: z.enum(['user', 'policy']).optional(),
});
export type StopTaskRequest = z.infer<typeof stopTaskRequestSchema>;
/** `stopping` until the runner proves the exit; a task already finished answers its terminal status. */
export const stopTaskReplySchema = z.union([
  z.object({ ok: z.literal(true), status: z.union([z.literal('stopping'), terminalStatus]), attempt: z.number().int() }),
  z.object({ ok: z.literal(false), error: rpcErrorSchema }),
]);
export type StopTaskReply = z.infer<typeof stopTaskReplySchema>;

/**
 * `stop-all` (POST /v1/conversations/:id/stop-all): ends the conversation's epoch `epoch` (the one the
 * caller saw). A repeated or late request for an epoch already ended answers the current epoch and
 * stops nothing.
 */
export const stopAllRequestSchema = z.object({
  tenant: z.string(),
  userId: z.string(),
  conversationId: z.string(),
  epoch: z.number().int().nonnegative(),
});
export type StopAllRequest = z.infer<typeof stopAllRequestSchema>;
/** `epoch` is the conversation's epoch after the call; `stopping` the tasks this call asked to stop. */
export const stopAllReplySchema = z.union([
  z.object({ ok: z.literal(true), epoch: z.number().int(), stopping: z.array(z.string()) }),
  z.object({ ok: z.literal(false), error: rpcErrorSchema }),
]);
export type StopAllReply = z.infer<typeof stopAllReplySchema>;
