import { requireConversation } from './conversation-read';
import { query } from './db';
import { openConversationFeed, resumeAfter, type ConversationFeed } from './event-feed';
import { openOutputFeed, resumeOffset } from './output-feed';
import type { GatewayResources, Principal } from './resources';
import { requireTask } from './task-read';

/** Opens a member's event feed of a conversation, resuming after `Last-Event-ID` or `?after=`. */
export interface FeedOpener {
  open(p: Principal, conversationId: string, lastEventId: unknown, after: unknown): Promise<ConversationFeed>;
  /** A live follow of a task's output from byte `Last-Event-ID` or `?offset=` (see `openOutputFeed`). */
  openOutput(p: Principal, taskId: string, lastEventId: unknown, offset: unknown): Promise<ConversationFeed>;
}

/** How often a quiet follow checks whether the result settled without an exit record. */
const SETTLE_CHECK_MS = 2000;

export function feedOpener(r: GatewayResources): FeedOpener {
  return {
    async open(p, conversationId, lastEventId, after) {
      await requireConversation(r.pool, p, conversationId);
      const from = resumeAfter(lastEventId, after);
      return openConversationFeed(r.nats, r.topology, conversationId, from, r.logger);
    },

    async openOutput(p, taskId, lastEventId, offset) {
      const task = await requireTask(r.pool, p, taskId);
      const from = resumeOffset(lastEventId, offset);
      const hooks = {
        checkEveryMs: SETTLE_CHECK_MS,
        async settledWithoutExit() {
          const rows = await query<{ result_state: string }>(
            r.pool,
            `SELECT COALESCE(c.result_state, t.result_state) AS result_state
               FROM tasks t LEFT JOIN ingest_cursors c ON c.command_id = t.command_id
              WHERE t.task_id = $1`,
            [task.task_id],
          );
          const state = rows[0]?.result_state;
          return state === 'unavailable' ? { resultState: state } : undefined;
        },
      };
      return openOutputFeed(r.nats, r.topology, task.command_id, from, hooks, r.logger);
    },
  };
}
