import type { StopTaskRequest } from '@handplane/contracts';
import { isTerminalStatus, type StopReason, type TaskState, type TerminalTaskStatus } from '@handplane/domain';
import { Conflict, IllegalState, NotFound } from '@handplane/kernel';
import type { CoordinatorDeps } from './deps';
import { carryOutStop } from './stop-signal';

type Deps = Pick<CoordinatorDeps, 'tasks' | 'registry' | 'runners' | 'clock' | 'logger' | 'settings' | 'pool' | 'lockPool'>;

const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/;

/**
 * RequestStop → TaskStopRequested (`stopping`). `attempt` fences the request (Conflict for another
 * attempt); a task already stopping stays as it is. Throws IllegalState for a finished task.
 */
/** A stop as the coordinator asks for it; `detail` says why in words when a policy asks (budgets). */
export interface StopAsk {
  readonly reason: StopReason;
  readonly requestedBy: string;
  readonly attempt?: number;
  readonly detail?: string;
}

export async function requestStop(d: Pick<Deps, 'tasks' | 'clock'>, taskId: string, stop: StopAsk): Promise<TaskState> {
  const r = await d.tasks.execute(
    taskId,
    {
      type: 'RequestStop',
      data: {
        reason: stop.reason,
        requestedBy: stop.requestedBy,
        ...(stop.attempt === undefined ? {} : { attempt: stop.attempt }),
        ...(stop.detail ? { detail: stop.detail } : {}),
      },
      metadata: { at: d.clock.now().toISOString(), actor: stop.requestedBy },
    },
    (events) => `stop-requested:${taskId}:${events[0]?.data.attempt ?? 0}`,
  );
  return r.state;
}

/** Requests the stop, then carries it out at once; what cannot be done now (runner unreachable) the stop sweep retries. */
export async function stopAndSignal(d: Deps, taskId: string, stop: StopAsk): Promise<TaskState> {
  const state = await requestStop(d, taskId, stop);
  try {
    await carryOutStop(d, taskId);
  } catch (e) {
    if (e instanceof Conflict) throw e;
    d.logger.warn({ err: e, taskId }, 'stop requested; the signal is left to the stop sweep');
  }
  return state;
}

type Reply = { ok: true; status: 'stopping' | TerminalTaskStatus; attempt: number };

const answer = (s: Exclude<TaskState, { status: 'none' }>): Reply => ({
  ok: true,
  status: isTerminalStatus(s.status) ? s.status : 'stopping',
  attempt: s.task.attempt,
});

/**
 * `stop-task` (POST /v1/tasks/:id/stop): the task becomes `stopping` until its runner proves the exit,
 * then `cancelled`. A task of another tenant is not found; `attempt` naming another attempt than the
 * current one is a conflict (HTTP 409), as is a runner that refuses the generation as stale. A
 * finished task answers its terminal status and nothing changes.
 */
export async function stopTask(d: Deps, req: StopTaskRequest): Promise<Reply> {
  if (!SUBJECT_TOKEN.test(req.taskId)) throw new NotFound('unknown task');
  const { state } = await d.tasks.load(req.taskId);
  if (state.status === 'none' || state.task.tenant !== req.tenant) throw new NotFound('unknown task');
  if (req.attempt !== undefined && req.attempt !== state.task.attempt) throw new Conflict(`attempt ${req.attempt} is not the task's current attempt (${state.task.attempt})`);
  if (isTerminalStatus(state.status)) return answer(state);
  try {
    const after = await stopAndSignal(d, req.taskId, { reason: req.reason ?? 'user', requestedBy: req.userId, ...(req.attempt === undefined ? {} : { attempt: req.attempt }) });
    if (after.status === 'none') throw new NotFound('unknown task');
    return answer(after);
  } catch (e) {
    // It finished while we asked: answer what it became.
    if (!(e instanceof IllegalState)) throw e;
    const { state: now } = await d.tasks.load(req.taskId);
    if (now.status === 'none' || !isTerminalStatus(now.status)) throw e;
    return answer(now);
  }
}
