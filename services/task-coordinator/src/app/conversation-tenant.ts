import type { MsgRequest } from '@nats-io/jetstream';
import { decodeConversationEvent, MalformedEvent, type Topology } from '@handplane/contracts';
import { NotFound, Unavailable } from '@handplane/kernel';
import type { Nats } from '@handplane/platform';

/** How many conversations' tenants are kept in memory (a tenant never changes, so entries never go stale). */
const CACHE_MAX = 10_000;

/**
 * `next_by_subj` on the stream leader's STREAM.MSG.GET: the first message of the conversation's
 * subject, which is its `conversation.created` (CONV keeps everything; nothing is published to a
 * conversation before it is created).
 */
const firstOf = (subject: string) => ({ seq: 1, next_by_subj: subject }) as unknown as MsgRequest;

/**
 * The tenant of each conversation, read from the log itself (not from a read model that may lag a
 * conversation created a moment ago): the start-task RPC refuses a task whose request names a tenant
 * the conversation is not in, whoever sends it on the internal NATS.
 */
export class ConversationTenants {
  private readonly known = new Map<string, string>();

  constructor(
    private readonly nats: Nats,
    private readonly t: Topology,
  ) {}

  /** The conversation's tenant; NotFound when no conversation of that id was ever created. */
  async tenantOf(conversationId: string): Promise<string> {
    const cached = this.known.get(conversationId);
    if (cached !== undefined) return cached;
    const m = await this.nats.jsm.streams.getMessage(this.t.streams.CONV, firstOf(this.t.conv(conversationId))).catch((e: unknown) => {
      throw new Unavailable(`cannot read conversation ${conversationId} from CONV`, { cause: e });
    });
    if (!m) throw new NotFound(`conversation ${conversationId} does not exist`);
    let tenant: string | undefined;
    try {
      const e = decodeConversationEvent(m.data);
      if (e.type === 'conversation.created' && e.data.conversationId === conversationId) tenant = e.data.tenant;
    } catch (err) {
      if (!(err instanceof MalformedEvent)) throw err;
    }
    // A subject whose first message is not its creation (junk published on the internal NATS) names no conversation.
    if (tenant === undefined) throw new NotFound(`conversation ${conversationId} does not exist`);
    if (this.known.size >= CACHE_MAX) this.known.delete(this.known.keys().next().value as string);
    this.known.set(conversationId, tenant);
    return tenant;
  }

  /**
   * Refuses (NotFound, the same answer as for a conversation that does not exist: the existence of
   * another tenant's conversation is not revealed) unless the conversation belongs to `tenant`.
   */
  async check(conversationId: string, tenant: string): Promise<void> {
    if ((await this.tenantOf(conversationId)) !== tenant) throw new NotFound(`conversation ${conversationId} does not exist`);
  }
}
