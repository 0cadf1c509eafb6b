import { z } from 'zod';
import { Conflict, NotFound, Unavailable } from '@handplane/kernel';
import type { ConversationEvent } from '@handplane/domain';
import { waitForProjection } from '@handplane/platform';
import { requireConversation } from './conversation-read';
import { guardDb, query } from './db';
import { isValidId } from './ids';
import { CONVERSATIONS_PROJECTION, type GatewayResources, type Principal } from './resources';
import { parseInput } from './validate';

const decisionSchema = z.object({ decision: z.enum(['approve', 'reject']) }).strict();
const answerSchema = z
  .object({
    text: z
      .string()
      .refine((s) => s.trim().length > 0, 'text must not be empty')
      .refine((s) => Buffer.byteLength(s) <= 64 * 1024, 'text must be at most 64 KiB'),
  })
  .strict();

type Kind = 'approval' | 'question';

/** Answers to what the agent asked (DESIGN.md §7; G7: a human answer ends a wait and starts a turn). */
export interface PromptsApp {
  resolveApproval(p: Principal, conversationId: string, approvalId: string, body: unknown): Promise<void>;
  answerQuestion(p: Principal, conversationId: string, questionId: string, body: unknown): Promise<void>;
}

export function promptsApp(r: GatewayResources): PromptsApp {
  const lookup = (conversationId: string, kind: Kind, id: string) =>
    query<{ status: string }>(r.pool, 'SELECT status FROM conversation_prompts WHERE conversation_id = $1 AND kind = $2 AND prompt_id = $3', [conversationId, kind, id]);

  /**
   * A client may answer a question it saw on the event stream before our read model applied it:
   * before saying "not found", catch up with the conversation's last event (bounded wait).
   */
  const catchUp = async (conversationId: string) => {
    let last: number;
    try {
      last = (await r.nats.jsm.streams.getMessage(r.topology.streams.CONV, { last_by_subj: r.topology.conv(conversationId) }))?.seq ?? 0;
    } catch (cause) {
      throw new Unavailable('cannot read the conversation log', { cause });
    }
    if (last > 0) await guardDb(() => waitForProjection(r.pool, CONVERSATIONS_PROJECTION, last, r.projectionWaitMs));
  };

  /** The prompt must exist in THIS conversation (404) and still be pending (409). */
  const requirePending = async (conversationId: string, kind: Kind, id: string) => {
    if (!isValidId(id)) throw new NotFound(`${kind} not found`);
    let rows = await lookup(conversationId, kind, id);
    if (!rows[0]) {
      await catchUp(conversationId);
      rows = await lookup(conversationId, kind, id);
    }
    if (!rows[0]) throw new NotFound(`${kind} not found`);
    if (rows[0].status !== 'pending') throw new Conflict(`${kind} ${id} is already resolved`);
  };

  /**
   * One resolution per prompt: the message id names the prompt, so a concurrent second answer
   * inside the stream's duplicate window is dropped by JetStream (and answered 409 here); after it,
   * the read model says "resolved". The agent runtime also takes only the first resolution.
   */
  const resolve = async (p: Principal, conversationId: string, kind: Kind, id: string, event: ConversationEvent) => {
    const { seq, duplicate } = await r.store.publish(r.topology.conv(conversationId), event, `${kind}-resolved:${conversationId}:${id}`);
    if (duplicate) throw new Conflict(`${kind} ${id} is already resolved`);
    const ok = await guardDb(() => waitForProjection(r.pool, CONVERSATIONS_PROJECTION, seq, r.projectionWaitMs));
    if (!ok) throw new Unavailable(`the ${kind} was resolved but is not visible yet`);
    r.logger.info({ conversationId, kind, id, by: p.userId }, 'prompt resolved');
  };

  const meta = (p: Principal) => ({ at: r.clock.now().toISOString(), actor: p.userId });

  return {
    async resolveApproval(p, conversationId, approvalId, body) {
      await requireConversation(r.pool, p, conversationId);
      await requirePending(conversationId, 'approval', approvalId);
      const { decision } = parseInput(decisionSchema, body);
      await resolve(p, conversationId, 'approval', approvalId, { type: 'approval.resolved', data: { approvalId, decision, by: p.userId, automated: false }, metadata: meta(p) });
    },

    async answerQuestion(p, conversationId, questionId, body) {
      await requireConversation(r.pool, p, conversationId);
      await requirePending(conversationId, 'question', questionId);
      const { text } = parseInput(answerSchema, body);
      await resolve(p, conversationId, 'question', questionId, { type: 'question.answered', data: { questionId, text, by: p.userId }, metadata: meta(p) });
    },
  };
}
