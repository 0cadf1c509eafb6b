import type { StopAllRequest } from '@handplane/contracts';
import type { EpochEnded } from '@handplane/domain';
import { Conflict, Unavailable, ValidationError } from '@handplane/kernel';
import { waitForProjection } from '@handplane/platform';
import { inBatches } from './batches';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import { knownEpoch, recordEpoch, scanEpochs, type KnownEpoch } from './epochs';
import { stopAndSignal } from './stop-task';
import { TASKS_PROJECTION } from './tasks.projection';

type Deps = CoordinatorDeps;
type Reply = { ok: true; epoch: number; stopping: string[] };
type Unfinished = { taskId: string; attempt: number };

const SUBJECT_TOKEN = /^[A-Za-z0-9_-]+$/;
/** Appends that lost the race to other conversation traffic before stop-all gives up (Unavailable). */
const MAX_APPEND_TRIES = 20;

/** Unfinished tasks of the conversation in `epoch` or before, after the read model caught up with TASKS (best effort). */
async function unfinishedTasks(d: Deps, tenant: string, conversationId: string, epoch: number): Promise<Unfinished[]> {
  const info = await d.nats.jsm.streams.info(d.t.streams.TASKS);
  await waitForProjection(d.pool, TASKS_PROJECTION, info.state.last_seq, 2_000);
  const r = await d.pool.query<{ task_id: string; attempt: number }>(
    `SELECT task_id, attempt FROM tasks WHERE conversation_id = $1 AND tenant = $2 AND epoch <= $3 AND status IN ('starting', 'running', 'stopping')
     ORDER BY created_at, task_id`,
    [conversationId, tenant, epoch],
  );
  return r.rows.map((x) => ({ taskId: x.task_id, attempt: x.attempt }));
}

/** Stops the tasks of an ended epoch; failures are left to the epoch sweep and the stop sweep. */
async function stopTasks(d: Deps, tasks: readonly Unfinished[], requestedBy: string): Promise<void> {
  await inBatches(tasks, 4, (t) =>
    stopAndSignal(d, t.taskId, { reason: 'stop_all', requestedBy }).catch((e) => d.logger.warn({ err: e, taskId: t.taskId }, 'stop-all: task not stopped yet; the sweeps retry')),
  );
}

/**
 * `stop-all` (POST /v1/conversations/:id/stop-all): ends epoch `req.epoch` of the conversation by
 * appending `epoch.ended` to `conv.<id>`, expecting the subject's last sequence seen while reading it
 * for earlier `epoch.ended` events (so two stop-alls never both end one epoch), and answers; every
 * unfinished task of that epoch is then stopped in the background (fenced by its generation at the
 * runner), and by the epoch sweep when that does not finish. A repeated or late
 * stop-all for an epoch already ended answers the current epoch and touches nothing; the running
 * agent turn is stopped by the runtime when it reads `epoch.ended`.
 */
export async function stopAll(d: Deps, req: StopAllRequest): Promise<Reply> {
  if (!SUBJECT_TOKEN.test(req.conversationId)) throw new ValidationError('invalid conversation id', ['conversationId: letters, digits, _ and -']);
  let known: KnownEpoch | null = await knownEpoch(d.pool, req.conversationId);
  let after = known?.endedSeq ?? 0;
  for (let i = 0; i < MAX_APPEND_TRIES; i++) {
    const scan = await scanEpochs(d, req.conversationId, after);
    if (scan.latest && (!known || scan.latest.epoch > known.epoch)) known = scan.latest;
    if (known && req.epoch !== known.epoch) {
      if (req.epoch < known.epoch) return { ok: true, epoch: known.epoch, stopping: [] };
      throw new Conflict(`epoch ${req.epoch} is not the conversation's epoch (${known.epoch})`);
    }
    const tasks = await unfinishedTasks(d, req.tenant, req.conversationId, req.epoch);
    const event: EpochEnded = {
      type: 'epoch.ended',
      data: { epoch: req.epoch, nextEpoch: req.epoch + 1, stoppedTaskIds: tasks.map((t) => t.taskId), stoppedTasks: tasks, by: req.userId },
      metadata: { at: d.clock.now().toISOString(), actor: req.userId },
    };
    let seq: number;
    try {
      seq = await d.store.append(d.t.conv(req.conversationId), [event], { expectedLastSeq: scan.lastSeq, msgId: `epoch-ended:${req.conversationId}:${req.epoch}` });
    } catch (e) {
      if (!(e instanceof Conflict)) throw e;
      after = scan.lastSeq; // something came in since: read only that, and try again
      continue;
    }
    await recordEpoch(d.pool, req.conversationId, req.epoch + 1, seq);
    d.logger.info({ conversationId: req.conversationId, epoch: req.epoch, stopping: tasks.length }, 'epoch ended');
    // Answered now (202): stopping hundreds of tasks (each signal fenced at its runner) outlasts any
    // caller's wait. The ended epoch is durable (CONV and conversation_epochs), so what this does not
    // finish (a crash, a runner away) the epoch sweep and the stop sweep carry out.
    void stopTasks(d, tasks, req.userId).catch((e) => d.logger.warn({ err: e, conversationId: req.conversationId }, 'stop-all: stops left to the sweeps'));
    return { ok: true, epoch: req.epoch + 1, stopping: event.data.stoppedTaskIds };
  }
  throw new Unavailable('the conversation is too busy to end its epoch now; try again');
}

/**
 * The epoch sweep: unfinished tasks registered under an epoch that has ended since (a start-task that
 * raced the stop-all, or a stop that failed) are stopped. Never touches a task of the current epoch.
 */
export async function stopEndedEpochTasks(d: Deps, limit = 100): Promise<number> {
  const r = await d.pool.query<{ task_id: string; attempt: number }>(
    `SELECT t.task_id, t.attempt FROM tasks t JOIN conversation_epochs e ON e.conversation_id = t.conversation_id
     WHERE t.status IN ('starting', 'running') AND t.epoch < e.epoch ORDER BY t.created_at LIMIT $1`,
    [limit],
  );
  let stopped = 0;
  for (const row of r.rows) {
    try {
      await stopAndSignal(d, row.task_id, { reason: 'stop_all', requestedBy: SYSTEM_ACTOR, attempt: row.attempt });
      stopped++;
    } catch (e) {
      // The read model lags the log: the task may have moved on (finished, next attempt) since.
      d.logger.debug({ err: e, taskId: row.task_id }, 'ended-epoch task not stopped this round');
    }
  }
  return stopped;
}
