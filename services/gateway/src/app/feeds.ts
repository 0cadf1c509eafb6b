import { requireConversation } from './conversation-read';
import { openConversationFeed, resumeAfter, type ConversationFeed } from './event-feed';
import type { GatewayResources, Principal } from './resources';

/** Opens a member's event feed of a conversation, resuming after `Last-Event-ID` or `?after=`. */
export interface FeedOpener {
  open(p: Principal, conversationId: string, lastEventId: unknown, after: unknown): Promise<ConversationFeed>;
}

export function feedOpener(r: GatewayResources): FeedOpener {
  return {
    async open(p, conversationId, lastEventId, after) {
      await requireConversation(r.pool, p, conversationId);
      const from = resumeAfter(lastEventId, after);
      return openConversationFeed(r.nats, r.topology, conversationId, from, r.logger);
    },
  };
}
