import { z } from 'zod';
import { rpcErrorSchema } from './rpc.schemas';

/**
 * `mark-delivered` (served by the log ingestor): a command's readable result was handed over — to the
 * agent (`read_output` reached the end of a finished task, or `exec` returned the whole result in the
 * foreground) or to a person (the output endpoint served the last byte of a direct command).
 * Idempotent: a repeat answers `delivered` again and appends nothing.
 */
export const markDeliveredRequestSchema = z.object({
  commandId: z.string().min(1).max(200),
  deliveredTo: z.enum(['agent', 'user']),
});
export type MarkDeliveredRequest = z.infer<typeof markDeliveredRequestSchema>;

/**
 * `illegal_state` when the result is not readable (still pending, or unavailable: an incomplete
 * result is never "delivered"); `not_found` for a command the ingestor does not follow.
 */
export const markDeliveredReplySchema = z.union([
  z.object({ ok: z.literal(true), resultState: z.literal('delivered'), appended: z.boolean() }),
  z.object({ ok: z.literal(false), error: rpcErrorSchema }),
]);
export type MarkDeliveredReply = z.infer<typeof markDeliveredReplySchema>;
