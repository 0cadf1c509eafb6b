import type { TaskState } from '@handplane/domain';
import { NotFound, Unavailable } from '@handplane/kernel';
import { inBatches } from './batches';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import { withLock } from './task-lock';

type Deps = Pick<CoordinatorDeps, 'tasks' | 'registry' | 'runners' | 'clock' | 'logger' | 'settings' | 'pool' | 'lockPool'>;
type Stopping = Extract<TaskState, { status: 'stopping' }>;

/** Where carrying out a stop got to. */
export type StopProgress =
  | 'signalled' // the runner acknowledged SIGTERM (SIGKILL follows after the grace); the exit settles the task
  | 'already_signalled'
  | 'not_stopping' // finished, or never asked to stop
  | 'abandoned' // stopped before any runner took it: ended without running
  | 'waiting' // stopped before the start; an Exec may still be on its way
  | 'unreachable' // the runner cannot be reached now: the sweep tries again; a lost runner makes the task lost
  | 'unknown_command' // the runner does not know the command: reconciliation decides
  | 'busy'; // another coordinator is carrying this stop out right now

const at = (d: Deps) => ({ at: d.clock.now().toISOString(), actor: SYSTEM_ACTOR });

/** A stop that came before any runner was recorded: find a runner that got the Exec anyway, or end the task. */
async function startless(d: Deps, taskId: string, s: Stopping): Promise<StopProgress> {
  const { commandId, attempt } = s.task;
  const live = await d.registry.live(d.clock.now(), d.settings.runnerLostAfterMs).catch((cause) => {
    throw new Unavailable('runner registry unreadable', { cause });
  });
  for (const r of live) {
    if (!(await d.runners.knows(r.address, commandId, attempt))) continue;
    await d.tasks.execute(taskId, { type: 'StartTask', data: { runnerId: r.runnerId, attempt }, metadata: at(d) }, `started:${taskId}:${attempt}:${r.runnerId}`);
    return carryOut(d, taskId);
  }
  if (d.clock.now().getTime() - Date.parse(s.stop.requestedAt) < d.settings.abandonStartAfterMs) return 'waiting';
  await d.tasks.execute(taskId, { type: 'AbandonStart', data: { reason: 'stopped before any runner took it' }, metadata: at(d) }, `abandoned:${taskId}:${attempt}`);
  d.logger.info({ taskId, attempt }, 'task stopped before it started');
  return 'abandoned';
}

async function carryOut(d: Deps, taskId: string): Promise<StopProgress> {
  const { state } = await d.tasks.load(taskId);
  if (state.status !== 'stopping') return 'not_stopping';
  if (state.stop.signalledAt !== null) return 'already_signalled';
  if (state.runnerId === null) return startless(d, taskId, state);
  const runner = await d.registry.get(state.runnerId).catch(() => null);
  if (!runner) return 'unreachable';
  const { commandId, attempt, epoch } = state.task;
  let outcome;
  try {
    outcome = await d.runners.signal(runner.address, { commandId, taskId, epoch, attempt, kind: 'stop', graceMs: d.settings.stopGraceMs, reason: state.stop.reason });
  } catch (e) {
    if (e instanceof NotFound) return 'unknown_command';
    if (e instanceof Unavailable) return 'unreachable';
    throw e; // Conflict: the runner runs another generation and signalled nothing
  }
  await d.tasks.execute(taskId, { type: 'RecordStopSignal', data: { attempt, runnerId: state.runnerId, outcome }, metadata: at(d) }, `stop-signalled:${taskId}:${attempt}`);
  d.logger.info({ taskId, attempt, runnerId: state.runnerId, outcome, reason: state.stop.reason }, 'stop signalled');
  return 'signalled';
}

/**
 * Carries out the stop of a `stopping` task: the fenced Signal(STOP, generation, STOP_GRACE_MS) to its
 * runner (the runner sends SIGTERM to the whole group and SIGKILL after the grace), recorded as
 * TaskStopSignalled once the runner acknowledged it. Never finishes a started task: only its proven
 * exit does. Throws Conflict when the runner refuses the generation as stale. One coordinator at a
 * time per task (advisory lock).
 */
export async function carryOutStop(d: Deps, taskId: string): Promise<StopProgress> {
  return (await withLock(d.lockPool ?? d.pool, `stop:${taskId}`, () => carryOut(d, taskId))) ?? 'busy';
}

/**
 * The stop sweep: every `stopping` task whose signal the runner has not acknowledged yet (from the
 * `tasks` read model, so pending stops survive restarts). Runs a few at a time.
 */
export async function stopSweep(d: Deps, limit = 100): Promise<number> {
  const due = await d.pool.query<{ task_id: string }>(
    `SELECT task_id FROM tasks WHERE status = 'stopping' AND stop_signalled_at IS NULL ORDER BY stop_requested_at NULLS FIRST LIMIT $1`,
    [limit],
  );
  const progress = await inBatches(due.rows, 4, ({ task_id: taskId }) =>
    carryOutStop(d, taskId).catch((e): StopProgress => {
      d.logger.warn({ err: e, taskId }, 'could not carry out a stop; the sweep retries');
      return 'unreachable';
    }),
  );
  return progress.filter((p) => p === 'signalled' || p === 'abandoned').length;
}
