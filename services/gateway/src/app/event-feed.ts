import { LIVE_CONSUME } from '@handplane/platform';
import { DeliverPolicy, type ConsumerMessages } from '@nats-io/jetstream';
import { Unavailable, ValidationError } from '@handplane/kernel';
import { decodeConversationEvent, type Topology } from '@handplane/contracts';
import type { Logger, Nats } from '@handplane/platform';

/** One conversation event as the SSE stream shows it: stream sequence, type, data. */
export interface FeedEvent {
  readonly seq: number;
  readonly type: string;
  readonly data: unknown;
}

/** A live, ordered read of one conversation's events; `close` removes the server-side consumer. */
export interface ConversationFeed {
  readonly events: AsyncIterable<FeedEvent>;
  close(): Promise<void>;
}

/**
 * Where to resume: `Last-Event-ID` wins over `?after=` (a reconnecting browser sends the header
 * while its URL still holds the first `after`). Both must be non-negative integers.
 */
export function resumeAfter(lastEventId: unknown, after: unknown): number {
  const raw = typeof lastEventId === 'string' && lastEventId.trim() !== '' ? lastEventId.trim() : after;
  if (raw === undefined || raw === '') return 0;
  const n = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) throw new ValidationError('Last-Event-ID / after must be a non-negative integer', [`after: ${JSON.stringify(raw)}`]);
  return n;
}

// The server removes a consumer whose client vanished without closing it after this long.
const INACTIVE_MS = 30_000;

/**
 * Opens an ordered consumer on CONV filtered to `conv.<id>`, starting after stream sequence
 * `after`, so a reconnect gets every later event once and none twice.
 */
export async function openConversationFeed(nats: Nats, t: Topology, conversationId: string, after: number, logger: Logger): Promise<ConversationFeed> {
  let iter: ConsumerMessages;
  let consumer: Awaited<ReturnType<Nats['js']['consumers']['get']>>;
  try {
    consumer = await nats.js.consumers.get(t.streams.CONV, {
      filter_subjects: t.conv(conversationId),
      ...(after > 0 ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 } : { deliver_policy: DeliverPolicy.All }),
      inactive_threshold: INACTIVE_MS,
    });
    // Re-pulls every 3 s (LIVE_CONSUME): with the default 30 s expiry a pull whose heartbeats were
    // missed under load, or across a NATS restart, left the stream silent for up to 45 s.
    iter = await consumer.consume({ ...LIVE_CONSUME, max_messages: 256 });
  } catch (cause) {
    throw new Unavailable('cannot read the conversation events', { cause });
  }
  async function* events(): AsyncGenerator<FeedEvent> {
    for await (const m of iter) {
      try {
        const e = decodeConversationEvent(m.data);
        yield { seq: m.seq, type: e.type, data: e.data };
      } catch (err) {
        // An event that fails its schema is not shown; the next one still is.
        logger.warn({ err, seq: m.seq, conversationId }, 'skipping a malformed conversation event');
      }
    }
  }
  let closed = false;
  return {
    events: events(),
    async close() {
      if (closed) return;
      closed = true;
      await iter.close().catch(() => undefined);
      await consumer.delete().catch(() => undefined);
    },
  };
}
