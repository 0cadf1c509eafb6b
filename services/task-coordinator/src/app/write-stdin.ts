import { createHash } from 'node:crypto';
import { STDIN_MAX_BYTES, type WriteStdinRequest } from '@handplane/contracts';
import type { TaskStdinWritten } from '@handplane/domain';
import { Conflict, IllegalState, NotFound, TooLarge, Unavailable } from '@handplane/kernel';
import type { CoordinatorDeps } from './deps';

type Deps = Pick<CoordinatorDeps, 't' | 'tasks' | 'registry' | 'runners' | 'store' | 'clock' | 'logger'>;
type Request = Omit<WriteStdinRequest, 'close' | 'via'> & { close: boolean; via: 'user' | 'agent' };

const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/;

export interface WriteStdinAnswer {
  readonly ok: true;
  readonly taskId: string;
  readonly attempt: number;
  readonly bytes: number;
  readonly closed: boolean;
  readonly totalBytes: number;
}

/**
 * `write-stdin`: input for a running task's command (and/or the end of it), fenced by the task's
 * generation at the runner. Only a started, unfinished task that is not being stopped takes input
 * (IllegalState otherwise: HTTP 409); another tenant's task, or another conversation's when the
 * caller names its conversation (the agent), is not found; an `attempt` other than the current one
 * is a Conflict. Every accepted write is recorded in the conversation as `task.stdin` with its size
 * and SHA-256, never its bytes (an answer to `Password:` is a secret); a repeated request (same total
 * so far, same closed state) records nothing new.
 */
export async function writeStdin(d: Deps, req: Request): Promise<WriteStdinAnswer> {
  if (!SUBJECT_TOKEN.test(req.taskId)) throw new NotFound('unknown task');
  const { state } = await d.tasks.load(req.taskId);
  if (state.status === 'none' || state.task.tenant !== req.tenant) throw new NotFound('unknown task');
  if (req.conversationId !== undefined && state.task.conversationId !== req.conversationId) throw new NotFound('unknown task');
  const { taskId, commandId, attempt, epoch, conversationId } = state.task;
  if (req.attempt !== undefined && req.attempt !== attempt) throw new Conflict(`attempt ${req.attempt} is not the task's current attempt (${attempt})`);
  if (state.status !== 'running') {
    const why = state.status === 'starting' ? 'has not started yet' : state.status === 'stopping' ? 'is being stopped' : `has finished (${state.status})`;
    throw new IllegalState(`task ${taskId} ${why}: its stdin takes no input`);
  }
  const data = Buffer.from(req.data, 'base64');
  if (data.length > STDIN_MAX_BYTES) throw new TooLarge(`stdin data is ${data.length} bytes; at most ${STDIN_MAX_BYTES} per write`);
  const runner = await d.registry.get(state.runnerId).catch(() => null);
  if (!runner) throw new Unavailable(`the runner of task ${taskId} cannot be reached now`);
  const r = await d.runners.writeStdin(runner.address, { commandId, taskId, epoch, attempt, data, close: req.close });
  const event: TaskStdinWritten = {
    type: 'task.stdin',
    data: { taskId, commandId, attempt, by: req.userId, via: req.via, bytes: r.written, sha256: createHash('sha256').update(data).digest('hex'), closed: r.closed },
    metadata: { at: d.clock.now().toISOString(), actor: req.userId },
  };
  // The write happened: a failed audit append is logged loudly, not turned into a failed write (a retry would write twice).
  await d.store.publish(d.t.conv(conversationId), event, `stdin:${taskId}:${attempt}:${r.totalWritten}:${r.closed ? 'closed' : 'open'}`).catch((err: unknown) => {
    d.logger.error({ err, taskId, attempt, bytes: r.written }, 'stdin written but its audit event could not be appended');
  });
  d.logger.info({ taskId, attempt, by: req.userId, via: req.via, bytes: r.written, closed: r.closed }, 'stdin written');
  return { ok: true, taskId, attempt, bytes: r.written, closed: r.closed, totalBytes: r.totalWritten };
}
