import { z } from 'zod';
import { NotFound, ValidationError } from '@handplane/kernel';
import { isTerminalTaskStatus } from '@handplane/domain';
import { checkRepeatedRead } from '../guards/guards';
import type { ReadOutputResult } from '../model/transcript';
import { displayText, utf8SafeLength } from './command-log';
import { readsOfRun } from './history';
import { invalidArgs, type Tool, type ToolDeps } from './tool';

/** Most bytes one `read_output` returns; `nextOffset` continues from there. */
export const READ_OUTPUT_CAP = 64 * 1024;

const argsSchema = z.object({ taskId: z.string().min(1).max(200), offset: z.number().int().nonnegative().optional() });

/** What the model is told about the range the output cap dropped: never a silent cut. */
export function droppedNote(d: { from: number; to: number }): NonNullable<ReadOutputResult['dropped']> {
  const droppedBytes = d.to - d.from;
  return { droppedFrom: d.from, droppedTo: d.to, droppedBytes, note: `${droppedBytes} bytes dropped by the output cap (offsets ${d.from} to ${d.to}); reading goes on at ${d.to}` };
}

/**
 * `read_output(taskId, offset?)`: the task's output from the durable Command Log, as text (invalid
 * UTF-8 replaced for display only), at most 64 KiB per call. Reading a finished task's result
 * means its completion needs no run of its own. Reading a running task again where the last read
 * found nothing new is polling (G3) and is refused.
 */
export function readOutputTool(deps: ToolDeps): Tool {
  return async (args, ctx) => {
    const parsed = argsSchema.safeParse(args);
    if (!parsed.success) throw new ValidationError(invalidArgs('read_output', parsed.error.issues));
    const { taskId, offset = 0 } = parsed.data;
    const task = await deps.host.readTask(taskId);
    if (!task || task.conversationId !== ctx.conversationId) throw new NotFound(`task ${taskId} is not a task of this conversation`);
    const read = await deps.host.readLog(task.commandId, offset, READ_OUTPUT_CAP);
    const keep = read.bytes.length === READ_OUTPUT_CAP ? utf8SafeLength(read.bytes) : read.bytes.length;
    const bytes = read.bytes.subarray(0, keep);
    // Inside the range the output cap dropped, the read moves to its end with no bytes.
    const nextOffset = bytes.length > 0 ? offset + bytes.length : Math.max(offset, read.nextOffset);
    const finished = isTerminalTaskStatus(task.status);
    checkRepeatedRead(readsOfRun(ctx.history, ctx.runId), taskId, offset, nextOffset - offset, finished);
    const eof = finished && nextOffset >= task.outputBytes;
    if (finished) await deps.host.markResultRead({ conversationId: ctx.conversationId, taskId, attempt: task.attempt, userId: task.userId, runId: ctx.runId });
    if (eof && task.resultState === 'readable') await deps.host.markDelivered(task.commandId);
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
      eof,
      ...(task.receipt ? { receipt: task.receipt } : {}),
      ...(read.dropped ? { dropped: droppedNote(read.dropped) } : {}),
    };
    return { ok: true, result, events: [] };
  };
}
