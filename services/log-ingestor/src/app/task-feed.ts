import { NotFound } from '@handplane/kernel';
import { currentTraceparent } from '@handplane/platform';
import { decodeTaskEvent } from '@handplane/contracts';
import type { TaskEvent, TaskRegistered, TaskStarted } from '@handplane/domain';
import { insertCursor } from './cursors.repository';
import type { IngestorDeps } from './deps';

/**
 * Handles one message of the `task.*` feed: a `TaskStarted` opens an `ingest_cursors` row (the command
 * now has output to follow); every other event is ignored. Returns true when a new row was inserted.
 */
export async function onTaskMessage(deps: IngestorDeps, data: Uint8Array): Promise<boolean> {
  const event = decodeTaskEvent(data);
  if (event.type !== 'TaskStarted') return false;
  return followCommand(deps, event);
}

async function followCommand(deps: IngestorDeps, started: TaskStarted): Promise<boolean> {
  const { taskId, commandId, attempt, runnerId, startedAt } = started.data;
  const { events } = await deps.store.read(deps.topology.streams.TASKS, deps.topology.task(taskId), decodeTaskEvent);
  const registered = events.map((e): TaskEvent => e.event).find((e): e is TaskRegistered => e.type === 'TaskRegistered');
  // TaskRegistered is appended before TaskStarted on the same subject: missing means a broken history.
  if (!registered) throw new NotFound(`task ${taskId} has no TaskRegistered before its TaskStarted`);
  const startedMs = Date.parse(startedAt);
  const foregroundUntil = new Date((Number.isNaN(startedMs) ? deps.clock.now().getTime() : startedMs) + registered.data.foregroundWindowMs);
  deps.traces?.remember(commandId, currentTraceparent());
  const inserted = await insertCursor(deps.pool, { commandId, taskId, conversationId: registered.data.conversationId, attempt, runnerId, foregroundUntil });
  if (inserted) deps.logger.info({ taskId, commandId, attempt, runnerId }, 'following command output');
  return inserted;
}
