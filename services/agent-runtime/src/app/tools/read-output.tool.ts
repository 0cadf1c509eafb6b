import { z } from 'zod';
import { NotFound, ValidationError } from '@handplane/kernel';
import { isTerminalTaskStatus } from '@handplane/domain';
import { markResultRead } from '../run/queue';
import type { ReadOutputResult } from '../model/transcript';
import { displayText, readCommandLog, utf8SafeLength } from './command-log';
import { readTask } from './task-view';
import type { Tool, ToolDeps } from './tool';

/** Most bytes one `read_output` returns; `nextOffset` continues from there. */
export const READ_OUTPUT_CAP = 64 * 1024;

const argsSchema = z.object({ taskId: z.string().min(1).max(200), offset: z.number().int().nonnegative().optional() });

/**
 * `read_output(taskId, offset?)`: the task's output from the durable Command Log, as text (invalid
 * UTF-8 replaced for display only), at most 64 KiB per call. Reading a finished task's result
 * means its completion needs no run of its own.
 */
export function readOutputTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(`invalid read_output arguments: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'args'}: ${i.message}`).join('; ')}`);
    const { taskId, offset = 0 } = parsed.data;
    const task = await readTask(deps.store, deps.topology, taskId);
    if (!task || task.conversationId !== ctx.conversationId) throw new NotFound(`task ${taskId} is not a task of this conversation`);
    const read = await readCommandLog(deps.pool, task.commandId, offset, READ_OUTPUT_CAP);
    const keep = read.bytes.length === READ_OUTPUT_CAP ? utf8SafeLength(read.bytes) : read.bytes.length;
    const bytes = read.bytes.subarray(0, keep);
    const nextOffset = offset + bytes.length;
    const finished = isTerminalTaskStatus(task.status);
    if (finished) await markResultRead(deps.pool, { conversationId: ctx.conversationId, taskId, attempt: task.attempt, userId: task.userId, runId: ctx.runId });
    const result: ReadOutputResult = {
      taskId,
      commandId: task.commandId,
      offset,
      nextOffset,
      bytes: bytes.length,
      text: displayText(bytes),
      status: task.status,
      exitCode: task.exitCode,
      signal: task.signal,
      resultState: task.resultState,
      eof: finished && nextOffset >= task.outputBytes,
    };
    return { ok: true, result, events: [] };
  };
}
