import { decodeSandboxCommandEvent, MalformedEvent } from '@handplane/contracts';
import { isTerminalStatus, type CommandExited, type SandboxCommandEvent } from '@handplane/domain';
import { NotFound } from '@handplane/kernel';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';

type Deps = Pick<CoordinatorDeps, 't' | 'store' | 'tasks' | 'clock' | 'logger'>;

// One unreadable event in a command's history must not keep its task from finishing.
const lenient = (data: Uint8Array): SandboxCommandEvent | null => {
  try {
    return decodeSandboxCommandEvent(data);
  } catch (e) {
    if (e instanceof MalformedEvent) return null;
    throw e;
  }
};

/** The exit of one attempt, from the command's subject (`cmd.<commandId>`), when it was recorded. */
export async function readExit(d: Pick<Deps, 't' | 'store'>, commandId: string, attempt: number): Promise<CommandExited['data'] | null> {
  const { events } = await d.store.read(d.t.streams.TASKS, d.t.cmd(commandId), lenient);
  for (const e of events) if (e.event?.type === 'CommandExited' && e.event.data.attempt === attempt) return e.event.data;
  return null;
}

/**
 * CommandResultReadable | CommandResultUnavailable → TaskFinished, with the exit code and signal
 * of the command's CommandExited. Idempotent: a finished task decides nothing.
 */
export async function settleTask(d: Deps, event: SandboxCommandEvent): Promise<void> {
  if (event.type !== 'CommandResultReadable' && event.type !== 'CommandResultUnavailable') return;
  const { taskId, commandId, attempt } = event.data;
  const { state } = await d.tasks.load(taskId);
  if (state.status === 'none') throw new NotFound(`result for unknown task ${taskId}`);
  if (state.task.commandId !== commandId || state.task.attempt !== attempt) {
    d.logger.warn({ taskId, commandId, attempt }, 'result of a command that is not the task’s current attempt; ignored');
    return;
  }
  if (isTerminalStatus(state.status)) return;
  const exit = await readExit(d, commandId, attempt);
  const readable = event.type === 'CommandResultReadable';
  const r = await d.tasks.execute(
    taskId,
    {
      type: 'FinishTask',
      data: {
        exitCode: exit?.exitCode ?? null,
        signal: exit?.signal ?? null,
        resultState: readable ? 'readable' : 'unavailable',
        outputBytes: readable ? event.data.outputBytes : event.data.durableBytes,
      },
      metadata: { at: d.clock.now().toISOString(), actor: SYSTEM_ACTOR },
    },
    `finished:${taskId}:${attempt}`,
  );
  if (r.events.length) d.logger.info({ taskId, status: r.state.status }, 'task finished');
}
