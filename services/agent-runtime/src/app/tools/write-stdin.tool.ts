import { z } from 'zod';
import { STDIN_MAX_BYTES } from '@handplane/contracts';
import { NotFound, ValidationError } from '@handplane/kernel';
import { invalidArgs, type Tool, type ToolDeps } from './tool';

const argsSchema = z
  .object({
    taskId: z.string().min(1).max(200),
    attempt: z.number().int().nonnegative(),
    data: z.string().default(''),
    close: z.boolean().default(false),
  })
  .strict();

/** What `write_stdin` answers the model. */
export interface StdinWritten {
  readonly taskId: string;
  readonly attempt: number;
  readonly bytes: number;
  readonly closed: boolean;
  readonly totalBytes: number;
}

/**
 * `write_stdin(taskId, attempt, data, close?)`: input for a running task of this conversation, e.g.
 * the answer to a `[y/N]` prompt (`data` is text; add the newline the command expects). Governance:
 * only the conversation's own tasks (another's is "not found"), and `attempt` must be the task's
 * current attempt, so input meant for an attempt never reaches its retry. The coordinator fences it
 * again at the runner and records `task.stdin` (size and digest, never the text).
 */
export function writeStdinTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(invalidArgs('write_stdin', parsed.error.issues));
    const { taskId, attempt, data, close } = parsed.data;
    const bytes = Buffer.from(data, 'utf8');
    if (bytes.length > STDIN_MAX_BYTES) throw new ValidationError(`write_stdin data is ${bytes.length} bytes; at most ${STDIN_MAX_BYTES} per call`);
    if (bytes.length === 0 && !close) throw new ValidationError('write_stdin needs data, close: true, or both');
    const task = await deps.host.readTask(taskId);
    if (!task || task.conversationId !== ctx.conversationId) throw new NotFound(`task ${taskId} is not a task of this conversation`);
    if (task.attempt !== attempt) throw new ValidationError(`attempt ${attempt} is not the current attempt of task ${taskId} (${task.attempt}); nothing was written`);
    const conv = await deps.host.conversation(ctx.conversationId);
    if (!conv) throw new NotFound(`conversation ${ctx.conversationId} is not known yet`);
    const reply = await deps.host.writeStdin({ tenant: conv.tenant, userId: ctx.userId, taskId, attempt, conversationId: ctx.conversationId, data: bytes.toString('base64'), close, via: 'agent' });
    if (!reply.ok) return { ok: false, result: { error: reply.error }, events: [] };
    const result: StdinWritten = { taskId, attempt: reply.attempt, bytes: reply.bytes, closed: reply.closed, totalBytes: reply.totalBytes };
    return { ok: true, result, events: [] };
  };
}
