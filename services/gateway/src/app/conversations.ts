import { z } from 'zod';
import { Conflict, Unavailable } from '@handplane/kernel';
import type { ConversationEvent } from '@handplane/domain';
import { waitForProjection } from '@handplane/platform';
import { conversationView, findOwnConversation, isMember, requireConversation, type ConversationView } from './conversation-read';
import { guardDb } from './db';
import { stableId } from './ids';
import { CONVERSATIONS_PROJECTION, type GatewayResources, type Principal } from './resources';
import { parseInput } from './validate';

const KEY = z.string().min(1).max(200);
const createSchema = z.object({ title: z.string().max(200).optional() }).strict();
const memberSchema = z.object({ userId: z.string().regex(/^[^\s\0]{1,200}$/, 'userId is 1 to 200 characters without spaces') }).strict();
const messageSchema = z
  .object({
    text: z
      .string()
      .refine((s) => s.trim().length > 0, 'text must not be empty')
      .refine((s) => Buffer.byteLength(s) <= 256 * 1024, 'text must be at most 256 KiB'),
    clientMessageId: KEY.optional(),
  })
  .strict();

export type Disposition = 'started' | 'queued';

/** The conversation use cases (DESIGN.md §7). */
export interface ConversationsApp {
  create(p: Principal, body: unknown, idempotencyKey?: string): Promise<{ id: string }>;
  get(p: Principal, id: string): Promise<ConversationView>;
  addMember(p: Principal, id: string, body: unknown): Promise<void>;
  postMessage(p: Principal, id: string, body: unknown): Promise<{ messageId: string; disposition: Disposition }>;
}

export function conversationsApp(r: GatewayResources): ConversationsApp {
  const meta = (p: Principal) => ({ at: r.clock.now().toISOString(), actor: p.userId });

  // Read-your-writes: answer only once our own read model shows the write.
  const visible = async (seq: number, what: string) => {
    const ok = await guardDb(() => waitForProjection(r.pool, CONVERSATIONS_PROJECTION, seq, r.projectionWaitMs));
    if (!ok) throw new Unavailable(`${what} was written but is not visible yet; retry with the same Idempotency-Key`);
  };

  return {
    async create(p, body, idempotencyKey) {
      const input = parseInput(createSchema, body);
      const key = idempotencyKey === undefined ? undefined : parseInput(KEY, idempotencyKey, 'Idempotency-Key');
      const id = key ? stableId('conversation', p.tenant, p.userId, key) : r.newId();
      const m = meta(p);
      const events: ConversationEvent[] = [
        { type: 'conversation.created', data: { conversationId: id, tenant: p.tenant, title: input.title ?? '', createdBy: p.userId }, metadata: m },
        { type: 'member.added', data: { conversationId: id, userId: p.userId, addedBy: p.userId }, metadata: m },
      ];
      let seq: number;
      try {
        seq = await r.store.append(r.topology.conv(id), events, { expectedLastSeq: 0, msgId: `create:${id}` });
      } catch (e) {
        // The same key after the stream's duplicate window: the conversation is already ours.
        if (e instanceof Conflict && key && (await findOwnConversation(r.pool, p, id))) return { id };
        throw e;
      }
      await visible(seq, `conversation ${id}`);
      return { id };
    },

    get: (p, id) => conversationView(r.pool, p, id),

    async addMember(p, id, body) {
      await requireConversation(r.pool, p, id);
      const { userId } = parseInput(memberSchema, body);
      // The member joins the caller's tenant: the tenant comes from the token, never from the body.
      if (await isMember(r.pool, id, userId)) return;
      const event: ConversationEvent = { type: 'member.added', data: { conversationId: id, userId, addedBy: p.userId }, metadata: meta(p) };
      const { seq } = await r.store.publish(r.topology.conv(id), event, `member:${id}:${userId}`);
      await visible(seq, `member ${userId}`);
    },

    async postMessage(p, id, body) {
      const conv = await requireConversation(r.pool, p, id);
      const input = parseInput(messageSchema, body);
      // A retried post (same clientMessageId from the same user) names the same message, so the
      // stream's deduplication drops the copy and the caller gets the same id back.
      const messageId = input.clientMessageId ? stableId('message', id, p.userId, input.clientMessageId) : r.newId();
      const event: ConversationEvent = {
        type: 'message.user',
        data: { messageId, userId: p.userId, text: input.text, ...(input.clientMessageId ? { clientMessageId: input.clientMessageId } : {}) },
        metadata: meta(p),
      };
      await r.store.publish(r.topology.conv(id), event, `message:${messageId}`);
      return { messageId, disposition: conv.run_status === 'idle' || conv.run_status === 'waiting' ? 'started' : 'queued' };
    },
  };
}
