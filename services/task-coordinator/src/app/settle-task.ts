import { decodeSandboxCommandEvent, MalformedEvent } from '@handplane/contracts';
import { isTerminalStatus, type CommandExited, type CommandResultReadable, type CommandResultUnavailable, type SandboxCommandEvent } from '@handplane/domain';
import { NotFound } from '@handplane/kernel';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import { retryPolicy } from './retry';

type Deps = Pick<CoordinatorDeps, 't' | 'store' | 'tasks' | 'clock' | 'logger' | 'settings'>;
type ResultEvent = CommandResultReadable | CommandResultUnavailable;

// One unreadable event in a command's history must not keep its task from finishing.
const lenient = (data: Uint8Array): SandboxCommandEvent | null => {
  try {
    return decodeSandboxCommandEvent(data);
  } catch (e) {
    if (e instanceof MalformedEvent) return null;
    throw e;
  }
};

/** What the command's subject (`cmd.<commandId>`) says about one attempt: its exit and its result, when recorded. */
export async function readCommand(d: Pick<Deps, 't' | 'store'>, commandId: string, attempt: number): Promise<{ exit: CommandExited['data'] | null; result: ResultEvent | null }> {
  const { events } = await d.store.read(d.t.streams.TASKS, d.t.cmd(commandId), lenient);
  let exit: CommandExited['data'] | null = null;
  let result: ResultEvent | null = null;
  for (const { event: e } of events) {
    if (!e || e.data.attempt !== attempt) continue;
    if (e.type === 'CommandExited') exit ??= e.data;
    else if (e.type === 'CommandResultReadable' || e.type === 'CommandResultUnavailable') result ??= e;
  }
  return { exit, result };
}

/** The exit of one attempt, when it was recorded. */
export async function readExit(d: Pick<Deps, 't' | 'store'>, commandId: string, attempt: number): Promise<CommandExited['data'] | null> {
  return (await readCommand(d, commandId, attempt)).exit;
}

/**
 * CommandResultReadable | CommandResultUnavailable → TaskFinished (or, for a lost attempt the retry
 * policy allows, TaskRetried), with the exit code, signal and reason of the command's CommandExited.
 * Idempotent: a finished task, or another attempt's result, decides nothing.
 */
export async function settleTask(d: Deps, event: SandboxCommandEvent): Promise<boolean> {
  if (event.type !== 'CommandResultReadable' && event.type !== 'CommandResultUnavailable') return false;
  const { taskId, commandId, attempt } = event.data;
  const { state } = await d.tasks.load(taskId);
  if (state.status === 'none') throw new NotFound(`result for unknown task ${taskId}`);
  if (state.task.commandId !== commandId || state.task.attempt !== attempt) {
    d.logger.warn({ taskId, commandId, attempt }, 'result of a command that is not the task’s current attempt; ignored');
    return false;
  }
  if (isTerminalStatus(state.status)) return false;
  const exit = await readExit(d, commandId, attempt);
  const readable = event.type === 'CommandResultReadable';
  const retry = retryPolicy(d.settings, taskId, attempt);
  const r = await d.tasks.execute(
    taskId,
    {
      type: 'FinishTask',
      data: {
        attempt,
        exitCode: exit?.exitCode ?? null,
        signal: exit?.signal ?? null,
        resultState: readable ? 'readable' : 'unavailable',
        outputBytes: readable ? event.data.outputBytes : event.data.durableBytes,
        ...(exit ? { exitReason: exit.reason } : {}),
        ...(retry ? { retry } : {}),
      },
      metadata: { at: d.clock.now().toISOString(), actor: SYSTEM_ACTOR },
    },
    `finished:${taskId}:${attempt}`,
  );
  for (const e of r.events) {
    if (e.type === 'TaskRetried') d.logger.warn({ taskId, attempt: e.data.attempt, reason: e.data.reason }, 'task retried');
    else d.logger.info({ taskId, status: r.state.status }, 'task finished');
  }
  return r.events.length > 0;
}

/**
 * Settles a task from its command's subject when the result is there (reconciliation: the result
 * event may have been missed). `result`: the command has one; `changed`: this call settled the task.
 */
export async function settleFromCommand(d: Deps, commandId: string, attempt: number): Promise<{ result: boolean; changed: boolean }> {
  const { result } = await readCommand(d, commandId, attempt);
  if (!result) return { result: false, changed: false };
  return { result: true, changed: await settleTask(d, result) };
}
