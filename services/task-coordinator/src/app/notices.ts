import type { ConversationEvent, TaskEvent, TaskFacts } from '@handplane/domain';
import { assertNever, type Metadata } from '@handplane/kernel';
import type { StoredEvent } from '@handplane/platform';
import type { CompletionOutbox } from './completion-outbox';
import type { CoordinatorDeps } from './deps';

type Deps = Pick<CoordinatorDeps, 't' | 'store' | 'tasks' | 'logger'>;

/** One CONV message to publish, with its deduplication id. */
export interface Notice {
  readonly event: ConversationEvent;
  readonly msgId: string;
}

/**
 * The conversation's view of one task event (the SSE names of DESIGN.md §7). Message ids derive from
 * the task event's stream sequence, so a redelivered task event publishes nothing new.
 */
export function noticesFor(task: TaskFacts, stored: StoredEvent<TaskEvent>): Notice[] {
  const e = stored.event;
  const metadata: Metadata = { at: e.metadata.at, ...(e.metadata.actor ? { actor: e.metadata.actor } : {}), ...(e.metadata.traceparent ? { traceparent: e.metadata.traceparent } : {}) };
  const id = `notice:${task.taskId}:${stored.seq}`;
  switch (e.type) {
    case 'TaskRegistered':
    case 'TaskStartFailed': // the TaskFinished{failed} (or the next attempt's task.started) that follows tells the conversation
    case 'TaskStopSignalled': // still `stopping` until the exit is proven
    case 'TaskRetried': // the next attempt's task.started tells it
      return [];
    case 'TaskStarted': {
      const { taskId, commandId, attempt, runnerId } = e.data;
      return [{ msgId: id, event: { type: 'task.started', data: { taskId, commandId, attempt, runnerId, userId: task.userId, command: task.command }, metadata } }];
    }
    case 'TaskBackgrounded':
      return [{ msgId: id, event: { type: 'task.backgrounded', data: { taskId: e.data.taskId, commandId: e.data.commandId }, metadata } }];
    case 'TaskStopRequested':
      return [
        {
          msgId: id,
          event: { type: 'task.stopping', data: { taskId: e.data.taskId, commandId: e.data.commandId, attempt: e.data.attempt, reason: e.data.reason, requestedBy: e.data.requestedBy }, metadata },
        },
      ];
    case 'TaskFinished': {
      const { taskId, commandId, status, exitCode, signal, resultState, outputBytes, receipt } = e.data;
      return [
        { msgId: id, event: { type: 'task.finished', data: { taskId, commandId, status, exitCode, signal, ...(receipt ? { receipt } : {}) }, metadata } },
        { msgId: `${id}:result`, event: { type: 'task.result', data: { taskId, commandId, resultState, outputBytes }, metadata } },
      ];
    }
    default:
      return assertNever(e, 'task event');
  }
}

/** Task events the conversation does not hear about (see noticesFor). */
const SILENT: ReadonlySet<TaskEvent['type']> = new Set(['TaskRegistered', 'TaskStartFailed', 'TaskStopSignalled', 'TaskRetried']);

/**
 * Mirrors a task event into its conversation (`conv.<conversationId>`), and for TaskFinished
 * records and publishes the completion through the outbox. The conversation and the user come
 * from the task's registration.
 */
export async function mirrorTaskEvent(d: Deps, outbox: CompletionOutbox, stored: StoredEvent<TaskEvent>): Promise<void> {
  if (SILENT.has(stored.event.type)) return;
  const { state } = await d.tasks.load(stored.event.data.taskId);
  if (state.status === 'none') {
    d.logger.warn({ seq: stored.seq, subject: stored.subject }, 'task event without a registration; no notice');
    return;
  }
  for (const n of noticesFor(state.task, stored)) await d.store.publish(d.t.conv(state.task.conversationId), n.event, n.msgId);
  if (stored.event.type === 'TaskFinished') await outbox.complete(state.task, stored.event);
}
