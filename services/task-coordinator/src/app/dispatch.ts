import { Unavailable, ValidationError } from '@handplane/kernel';
import type { RunnerRecord } from '@handplane/platform';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import type { ExecOrder } from './runner-port';

/** Why a start is given up when no runner took it within the allowed deliveries. */
export const NO_RUNNER = 'no runner available';

type Deps = Pick<CoordinatorDeps, 'tasks' | 'registry' | 'runners' | 'clock' | 'logger' | 'settings'>;

/**
 * Which delivery of the message this is. Delivery `max` is the last that tries a runner; it gives
 * up with FailStart. The consumer keeps redelivering past `max` only when recording that failed.
 */
export interface Delivery {
  readonly count: number;
  readonly max: number;
}

async function liveRunners(d: Deps): Promise<RunnerRecord[]> {
  return d.registry.live(d.clock.now(), d.settings.runnerLostAfterMs).catch((cause) => {
    throw new Unavailable('runner registry unreadable', { cause });
  });
}

/** The live runner that already has this attempt (an Exec reached it before TaskStarted was recorded). */
export async function runnerHolding(d: Deps, order: ExecOrder, live?: RunnerRecord[]): Promise<RunnerRecord | undefined> {
  for (const r of live ?? (await liveRunners(d))) if (await d.runners.knows(r.address, order.commandId, order.attempt)) return r;
  return undefined;
}

/**
 * Picks the runner for a command: on a redelivery, the runner that already has it (the command must
 * not run twice); otherwise the live runner with the fewest running commands and room left.
 */
export async function chooseRunner(d: Deps, order: ExecOrder, redelivered: boolean): Promise<RunnerRecord> {
  const live = await liveRunners(d);
  if (live.length === 0) throw new Unavailable('no live runner in the registry');
  const holding = redelivered ? await runnerHolding(d, order, live) : undefined;
  if (holding) return holding;
  const open = live.filter((r) => r.capacity === 0 || r.running < r.capacity);
  if (open.length === 0) throw new Unavailable('every live runner is at capacity');
  open.sort((a, b) => a.running - b.running || a.runnerId.localeCompare(b.runnerId));
  return open[0]!;
}

async function failStart(d: Deps, taskId: string, attempt: number, reason: string): Promise<void> {
  const at = d.clock.now().toISOString();
  await d.tasks.execute(taskId, { type: 'FailStart', data: { reason }, metadata: { at, actor: SYSTEM_ACTOR } }, `start-failed:${taskId}:${attempt}`);
  d.logger.warn({ taskId, attempt, reason }, 'task start failed');
}

/**
 * TaskRegistered (or a TaskStartFailed without its finish) → Exec on a runner → TaskStarted.
 * A runner's refusal fails the start at once; no runner (or an unreachable one) is retried through
 * the consumer's backoff, and the last delivery fails the start so no task stays `starting` forever.
 */
export async function dispatchTask(d: Deps, taskId: string, delivery: Delivery): Promise<void> {
  const { state, registered } = await d.tasks.load(taskId);
  // Only a task still waiting for its runner is ours to start; anything else was settled already.
  if (state.status !== 'starting' || !registered) return;
  const reg = registered.event.data;
  if (state.startFailure !== null) return failStart(d, taskId, reg.attempt, state.startFailure);
  const order: ExecOrder = {
    commandId: reg.commandId,
    taskId,
    conversationId: reg.conversationId,
    tenant: reg.tenant,
    epoch: reg.epoch,
    attempt: reg.attempt,
    command: reg.command,
    cwd: reg.cwd,
    env: reg.env,
    timeoutMs: reg.timeoutMs,
  };
  let runner: RunnerRecord;
  try {
    if (delivery.count > delivery.max) {
      // Past the last attempt, recording the outcome failed before: record it, starting nothing new.
      const holding = await runnerHolding(d, order);
      if (!holding) return failStart(d, taskId, reg.attempt, NO_RUNNER);
      runner = holding;
    } else {
      runner = await chooseRunner(d, order, delivery.count > 1);
      await d.runners.exec(runner.address, order);
    }
  } catch (e) {
    if (e instanceof ValidationError) return failStart(d, taskId, reg.attempt, e.message);
    // Whatever kept us from a runner on the last attempt, the task must not stay `starting`.
    if (delivery.count >= delivery.max) return failStart(d, taskId, reg.attempt, NO_RUNNER);
    throw e;
  }
  const at = d.clock.now().toISOString();
  await d.tasks.execute(
    taskId,
    { type: 'StartTask', data: { runnerId: runner.runnerId }, metadata: { at, actor: SYSTEM_ACTOR } },
    `started:${taskId}:${reg.attempt}:${runner.runnerId}`,
  );
  d.logger.info({ taskId, commandId: reg.commandId, runnerId: runner.runnerId }, 'task started');
}
