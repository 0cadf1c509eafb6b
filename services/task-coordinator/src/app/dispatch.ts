import { isTerminalStatus, type TaskEvent } from '@handplane/domain';
import { Conflict, IllegalState, Unavailable, ValidationError } from '@handplane/kernel';
import type { RunnerRecord } from '@handplane/platform';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import { knownEpoch } from './epochs';
import { retryPolicy } from './retry';
import type { ExecOrder } from './runner-port';
import { requestStop } from './stop-task';

/** Why a start is given up when no runner took it within the allowed deliveries (transient: the retry policy may try again). */
export const NO_RUNNER = 'no runner available';

type Deps = Pick<CoordinatorDeps, 'tasks' | 'registry' | 'runners' | 'clock' | 'logger' | 'settings' | 'pool' | 'placements'>;

/**
 * Which delivery of the message this is. Delivery `max` is the last that tries a runner; it gives
 * up with FailStart. The consumer keeps redelivering past `max` only when recording that failed.
 */
export interface Delivery {
  readonly count: number;
  readonly max: number;
}

/** The task event that asks for a dispatch: the one that began the attempt, or a start failure to complete. */
export type DispatchTrigger = Extract<TaskEvent, { type: 'TaskRegistered' | 'TaskRetried' | 'TaskStartFailed' }>;

async function liveRunners(d: Deps): Promise<RunnerRecord[]> {
  return d.registry.live(d.clock.now(), d.settings.runnerLostAfterMs).catch((cause) => {
    throw new Unavailable('runner registry unreadable', { cause });
  });
}

/** The live runner that already has this attempt (an Exec reached it before TaskStarted was recorded). */
export async function runnerHolding(d: Pick<Deps, 'registry' | 'runners' | 'clock' | 'settings'>, order: Pick<ExecOrder, 'commandId' | 'attempt'>, live?: RunnerRecord[]): Promise<RunnerRecord | undefined> {
  for (const r of live ?? (await liveRunners(d as Deps))) if (await d.runners.knows(r.address, order.commandId, order.attempt)) return r;
  return undefined;
}

/**
 * Picks the runner for a command: on a redelivery, the runner that already has it (the command must
 * not run twice); otherwise the live runner with the fewest running commands and room left.
 */
export async function chooseRunner(d: Pick<Deps, 'registry' | 'runners' | 'clock' | 'settings' | 'placements'>, order: ExecOrder, redelivered: boolean): Promise<RunnerRecord> {
  const live = await liveRunners(d as Deps);
  if (live.length === 0) throw new Unavailable('no live runner in the registry');
  const holding = redelivered ? await runnerHolding(d, order, live) : undefined;
  if (holding) return holding;
  // From here on nothing awaits: the count and the placement below are one step.
  const nowMs = d.clock.now().getTime();
  const load = new Map(live.map((r) => [r.runnerId, r.running + (d.placements?.pending(r) ?? 0)]));
  const open = live.filter((r) => r.capacity === 0 || load.get(r.runnerId)! < r.capacity);
  if (open.length === 0) throw new Unavailable('every live runner is at capacity');
  const reachable = open.filter((r) => d.placements?.reachable(r.runnerId, nowMs) ?? true);
  const pick = reachable.length > 0 ? reachable : open;
  pick.sort((a, b) => load.get(a.runnerId)! - load.get(b.runnerId)! || a.runnerId.localeCompare(b.runnerId));
  d.placements?.place(pick[0]!.runnerId, nowMs);
  return pick[0]!;
}

const now = (d: Deps) => ({ at: d.clock.now().toISOString(), actor: SYSTEM_ACTOR });

/** Fails the start of `attempt`; a transient failure (no runner) may start the next attempt (retry policy). */
async function failStart(d: Deps, taskId: string, attempt: number, reason: string): Promise<void> {
  const retry = reason === NO_RUNNER ? retryPolicy(d.settings, taskId, attempt) : undefined;
  await d.tasks.execute(taskId, { type: 'FailStart', data: { reason, attempt, ...(retry ? { retry } : {}) }, metadata: now(d) }, `start-failed:${taskId}:${attempt}`);
  d.logger.warn({ taskId, attempt, reason }, 'task start failed');
}

/** A command that started after its task moved on (finished, stopped before the start, next attempt): kill it. */
async function killOrphan(d: Deps, runner: RunnerRecord, order: ExecOrder, why: unknown): Promise<void> {
  d.logger.warn({ taskId: order.taskId, commandId: order.commandId, runnerId: runner.runnerId, why: (why as Error).message }, 'command started for a task that moved on: killing it');
  await d.runners
    .signal(runner.address, { commandId: order.commandId, taskId: order.taskId, epoch: order.epoch, attempt: order.attempt, kind: 'kill', graceMs: 0, reason: 'orphan' })
    .catch((e) => d.logger.warn({ err: e, commandId: order.commandId }, 'orphan not killed now; reconciliation kills it'));
}

/** True when the task no longer waits for this runner to run `attempt` (finished, next attempt, or started elsewhere). */
async function movedOn(d: Deps, taskId: string, attempt: number, runnerId: string): Promise<boolean> {
  const { state } = await d.tasks.load(taskId);
  if (state.status === 'none') return false;
  return state.task.attempt !== attempt || isTerminalStatus(state.status) || (state.runnerId !== null && state.runnerId !== runnerId);
}

/** A task registered under an epoch stop-all has ended since: it must not start. */
async function refuseEndedEpoch(d: Deps, taskId: string, attempt: number, delivery: Delivery): Promise<void> {
  await requestStop(d, taskId, { reason: 'stop_all', requestedBy: SYSTEM_ACTOR, attempt });
  // On the first delivery nobody has sent an Exec for this attempt: it ends at once. Otherwise the
  // stop sweep first looks for a runner that got one.
  if (delivery.count === 1) {
    await d.tasks.execute(taskId, { type: 'AbandonStart', data: { reason: 'its epoch ended before it started' }, metadata: now(d) }, `abandoned:${taskId}:${attempt}`);
  }
}

/**
 * TaskRegistered / TaskRetried (or a TaskStartFailed without what follows it) → Exec on a runner →
 * TaskStarted. A runner's refusal fails the start at once; no runner (or an unreachable one) is
 * retried through the consumer's backoff, and the last delivery fails the start so no task stays
 * `starting` forever. Each attempt is dispatched only by the event that began it.
 */
export async function dispatchTask(d: Deps, taskId: string, delivery: Delivery, trigger?: DispatchTrigger): Promise<void> {
  const { state, registered } = await d.tasks.load(taskId);
  // Only a task still waiting for its runner is ours to start; anything else was settled already.
  if (state.status !== 'starting' || !registered) return;
  const { commandId, attempt, epoch, conversationId, tenant } = state.task;
  if (trigger && trigger.data.attempt !== attempt) return;
  if (state.startFailure !== null) return failStart(d, taskId, attempt, state.startFailure);
  if (trigger?.type === 'TaskStartFailed') return;
  const known = await knownEpoch(d.pool, conversationId);
  if (known && epoch < known.epoch) return refuseEndedEpoch(d, taskId, attempt, delivery);
  const reg = registered.event.data;
  // The runner's own wall-time limit is a backstop for when no coordinator is around: the deadline's
  // stop (SIGTERM, SIGKILL after the grace) comes first, so a timed-out task shows the stop it got.
  const backstopMs = reg.timeoutMs > 0 ? reg.timeoutMs + 2 * d.settings.stopGraceMs : 0;
  const order: ExecOrder = { commandId, taskId, conversationId, tenant, epoch, attempt, command: reg.command, cwd: reg.cwd, env: reg.env, timeoutMs: backstopMs };
  let runner: RunnerRecord;
  try {
    if (delivery.count > delivery.max) {
      // Past the last attempt, recording the outcome failed before: record it, starting nothing new.
      const holding = await runnerHolding(d, order);
      if (!holding) return failStart(d, taskId, attempt, NO_RUNNER);
      runner = holding;
    } else {
      runner = await chooseRunner(d, order, delivery.count > 1);
      const chosen = runner;
      await d.runners.exec(runner.address, order).then(
        () => d.placements?.reached(chosen.runnerId),
        (e: unknown) => {
          if (!(e instanceof ValidationError)) d.placements?.unreachable(chosen.runnerId, d.clock.now().getTime());
          throw e;
        },
      );
    }
  } catch (e) {
    if (e instanceof ValidationError) return failStart(d, taskId, attempt, e.message);
    // Whatever kept us from a runner on the last attempt, the task must not stay `starting`.
    if (delivery.count >= delivery.max) return failStart(d, taskId, attempt, NO_RUNNER);
    throw e;
  }
  try {
    await d.tasks.execute(taskId, { type: 'StartTask', data: { runnerId: runner.runnerId, attempt }, metadata: now(d) }, `started:${taskId}:${attempt}:${runner.runnerId}`);
  } catch (e) {
    if ((e instanceof IllegalState || e instanceof Conflict) && (await movedOn(d, taskId, attempt, runner.runnerId))) return killOrphan(d, runner, order, e);
    throw e;
  }
  d.logger.info({ taskId, commandId, attempt, runnerId: runner.runnerId }, 'task started');
}
