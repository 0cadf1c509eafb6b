import type { TaskAwaitingInput } from '@handplane/domain';
import type { Cursor } from './cursors.repository';
import { systemMetadata, type IngestorDeps } from './deps';
import type { DuePrompt } from './prompt-watch';

/**
 * `task.awaiting_input` into the task's conversation, once per prompt (message id keyed by the offset
 * where the output ended, so a replay after a crash adds nothing). Best effort: a failure here never
 * fails ingestion.
 */
export async function publishPrompt(deps: IngestorDeps, cur: Cursor, due: DuePrompt): Promise<void> {
  const event: TaskAwaitingInput = {
    type: 'task.awaiting_input',
    data: { taskId: cur.taskId, commandId: cur.commandId, attempt: cur.attempt, offset: due.offset, prompt: due.prompt },
    metadata: systemMetadata(deps.clock),
  };
  try {
    await deps.store.publish(deps.topology.conv(cur.conversationId), event, `prompt:${cur.commandId}:${due.offset}`);
    deps.logger.info({ commandId: cur.commandId, taskId: cur.taskId, offset: due.offset }, 'command awaits input');
  } catch (e) {
    deps.logger.warn({ err: e, commandId: cur.commandId, offset: due.offset }, 'task.awaiting_input not published');
  }
}
