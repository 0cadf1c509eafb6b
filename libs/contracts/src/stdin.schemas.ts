import { z } from 'zod';
import { rpcErrorSchema } from './rpc.schemas';

/** Most bytes of input one write may carry (the runner's own per-call limit). */
export const STDIN_MAX_BYTES = 64 * 1024;

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * `write-stdin` (`POST /v1/tasks/:id/stdin`, the agent's `write_stdin`): writes to a running task's
 * standard input and/or closes it. `data` is base64 (bytes stay bytes). `attempt`, when given, fences
 * the request: another attempt than the current one answers `conflict` (HTTP 409). The coordinator
 * checks the task's tenant (`not_found` otherwise) and `conversationId` when given (the runtime's
 * governance: only the conversation's own tasks); the gateway checks membership before calling.
 */
export const writeStdinRequestSchema = z
  .object({
    tenant: z.string(),
    userId: z.string(),
    taskId: z.string(),
    attempt: z.number().int().nonnegative().optional(),
    conversationId: z.string().optional(),
    data: z.string().max(Math.ceil(STDIN_MAX_BYTES / 3) * 4 + 4).regex(BASE64, 'data must be base64'),
    close: z.boolean().default(false),
    /** Who wrote: a person (`user`) or the agent; recorded in the audit event. */
    via: z.enum(['user', 'agent']).default('user'),
  })
  .strict();
export type WriteStdinRequest = z.input<typeof writeStdinRequestSchema>;

/** `bytes` written by this call, `closed` once stdin is closed, `attempt` the attempt written to. */
export const writeStdinReplySchema = z.union([
  z.object({ ok: z.literal(true), taskId: z.string(), attempt: z.number().int(), bytes: z.number().int(), closed: z.boolean(), totalBytes: z.number().int() }),
  z.object({ ok: z.literal(false), error: rpcErrorSchema }),
]);
export type WriteStdinReply = z.infer<typeof writeStdinReplySchema>;
