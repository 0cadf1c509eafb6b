import { DeliverPolicy } from '@nats-io/jetstream';
import { Unavailable, ValidationError } from '@handplane/kernel';
import { decodeConversationEvent } from '@handplane/contracts';
import { requireConversation } from './conversation-read';
import { resumeAfter } from './event-feed';
import type { GatewayResources, Principal } from './resources';

/** One entry of the audit log: the event as it was written, with when and by whom. */
export interface AuditEntry {
  seq: number;
  time: string;
  type: string;
  actor: string | null;
  data: unknown;
}

/** A page of the audit log; `nextAfter` is set when more entries follow. */
export interface AuditPage {
  entries: AuditEntry[];
  nextAfter?: number;
}

export interface AuditApp {
  read(p: Principal, conversationId: string, q: { after?: unknown; limit?: unknown }): Promise<AuditPage>;
}

const MAX_LIMIT = 5000;

function parseLimit(raw: unknown): number {
  if (raw === undefined || raw === '') return 1000;
  const n = typeof raw === 'string' && /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new ValidationError(`limit must be 1 to ${MAX_LIMIT}`, [`limit: ${JSON.stringify(raw)}`]);
  return n;
}

// The log keeps every version; an event this build cannot decode is still shown as written.
function entryOf(seq: number, time: string, data: Uint8Array): AuditEntry {
  try {
    const e = decodeConversationEvent(data);
    return { seq, time, type: e.type, actor: e.metadata.actor ?? null, data: e.data };
  } catch {
    let raw: { type?: unknown; data?: unknown; metadata?: { actor?: unknown } } = {};
    try {
      raw = JSON.parse(Buffer.from(data).toString('utf8'));
    } catch {
      /* not JSON at all */
    }
    return { seq, time, type: typeof raw.type === 'string' ? raw.type : 'unreadable', actor: typeof raw.metadata?.actor === 'string' ? raw.metadata.actor : null, data: raw.data ?? null };
  }
}

/**
 * The conversation's events from the log (CONV `conv.<id>`), in stream order, read with an ordered
 * consumer. Task events (TASKS) are not merged in: their CONV notices (`task.*`) stand for them.
 */
export function auditApp(r: GatewayResources): AuditApp {
  return {
    async read(p, conversationId, q) {
      await requireConversation(r.pool, p, conversationId);
      const after = resumeAfter(undefined, q.after);
      const limit = parseLimit(q.limit);
      const subject = r.topology.conv(conversationId);
      const entries: AuditEntry[] = [];
      try {
        const last = await r.nats.jsm.streams.getMessage(r.topology.streams.CONV, { last_by_subj: subject });
        if (!last || last.seq <= after) return { entries };
        const consumer = await r.nats.js.consumers.get(r.topology.streams.CONV, { filter_subjects: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 });
        const iter = await consumer.consume({ max_messages: Math.min(limit, 1000) });
        try {
          for await (const m of iter) {
            entries.push(entryOf(m.seq, new Date(Math.floor(m.info.timestampNanos / 1e6)).toISOString(), m.data));
            if (m.seq >= last.seq || entries.length >= limit) break;
          }
        } finally {
          await iter.close().catch(() => undefined);
        }
        const tail = entries[entries.length - 1];
        return tail && tail.seq < last.seq ? { entries, nextAfter: tail.seq } : { entries };
      } catch (cause) {
        throw new Unavailable('cannot read the conversation log', { cause });
      }
    },
  };
}
