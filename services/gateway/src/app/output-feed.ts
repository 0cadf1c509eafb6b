import { LIVE_CONSUME } from '@handplane/platform';
import { DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { Unavailable, ValidationError } from '@handplane/kernel';
import type { Topology } from '@handplane/contracts';
import type { Logger, Nats } from '@handplane/platform';
import type { ConversationFeed, FeedEvent } from './event-feed';

// The server removes a consumer whose client vanished without closing it after this long.
const INACTIVE_MS = 30_000;

/**
 * Where a follow resumes: `Last-Event-ID` (the byte offset the client has reached: every event's
 * id is the offset after it) wins over `?offset=`. Both must be non-negative integers.
 */
export function resumeOffset(lastEventId: unknown, offset: unknown): number {
  const raw = typeof lastEventId === 'string' && lastEventId.trim() !== '' ? lastEventId.trim() : offset;
  if (raw === undefined || raw === '') return 0;
  const n = typeof raw === 'string' && /^\d{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n)) throw new ValidationError('Last-Event-ID / offset must be a non-negative integer', [`offset: ${JSON.stringify(raw)}`]);
  return n;
}

/** What a follow of one command's output says, besides its bytes. */
export interface OutputFollowHooks {
  /** Checked between messages (and on quiet spells): a result settled without an exit record (host lost). */
  settledWithoutExit(): Promise<{ resultState: string } | undefined>;
  /** How often to run that check while no message comes. */
  readonly checkEveryMs: number;
}

/**
 * A live, exact read of one command's output from the LOGS stream (`log.<commandId>`), from byte
 * `from`: the same chunks the Command Log holds (the ingestor publishes each one once), as events
 *
 *   `chunk`     {offset, data: base64, stream}   id = offset after it
 *   `truncated` {droppedFrom, droppedTo, droppedBytes} (the output cap's gap; the next chunk starts at droppedTo)
 *   `end`       {nextOffset, exit | null, complete}  — the last event; the feed ends after it
 *
 * `end` comes with the exit record (every byte up to it is durable) or, for a result settled without
 * one (the host was lost), with `complete: false`.
 */
export async function openOutputFeed(nats: Nats, t: Topology, commandId: string, from: number, hooks: OutputFollowHooks, logger: Logger): Promise<ConversationFeed> {
  let iter: ConsumerMessages;
  let consumer: Awaited<ReturnType<Nats['js']['consumers']['get']>>;
  try {
    consumer = await nats.js.consumers.get(t.streams.LOGS, { filter_subjects: t.log(commandId), deliver_policy: DeliverPolicy.All, inactive_threshold: INACTIVE_MS });
    // Re-pulls every 3 s (LIVE_CONSUME), as the event feed does.
    iter = await consumer.consume({ ...LIVE_CONSUME, max_messages: 64 });
  } catch (cause) {
    throw new Unavailable('cannot read the output log', { cause });
  }
  let closed = false;

  // Messages as they come, and a tick on quiet spells so a lost host's result still ends the feed.
  async function* withTicks(): AsyncGenerator<JsMsg | 'tick'> {
    const it = iter[Symbol.asyncIterator]();
    let next: Promise<IteratorResult<JsMsg>> | undefined = it.next();
    try {
      for (;;) {
        let timer: NodeJS.Timeout | undefined;
        const tick = new Promise<'tick'>((res) => (timer = setTimeout(() => res('tick'), hooks.checkEveryMs)));
        const r = await Promise.race([next!, tick]);
        clearTimeout(timer);
        if (r === 'tick') {
          yield 'tick';
          continue;
        }
        next = undefined;
        if (r.done) return;
        yield r.value;
        next = it.next();
      }
    } finally {
      // The consumer's close() resolves once its reader takes the end: leave one read pending.
      if (!next) void it.next().catch(() => undefined);
    }
  }

  async function* events(): AsyncGenerator<FeedEvent> {
    let pos = from;
    let sinceCheck = 0;
    for await (const m of withTicks()) {
      if (closed) return;
      if (m === 'tick' || ++sinceCheck >= 256) {
        sinceCheck = 0;
        const settled = await hooks.settledWithoutExit();
        if (settled) {
          yield { seq: pos, type: 'end', data: { nextOffset: pos, exit: null, complete: false, resultState: settled.resultState } };
          return;
        }
        if (m === 'tick') continue;
      }
      const exit = m.headers?.get('Hp-Exit');
      if (exit) {
        const record = JSON.parse(exit) as { endOffset: number };
        yield { seq: Math.max(pos, record.endOffset), type: 'end', data: { nextOffset: Math.max(pos, record.endOffset), exit: record, complete: pos >= record.endOffset } };
        return;
      }
      const truncated = m.headers?.get('Hp-Truncated');
      if (truncated) {
        const d = JSON.parse(truncated) as { droppedFrom: number; droppedTo: number; droppedBytes: number };
        if (pos < d.droppedTo) {
          pos = Math.max(pos, d.droppedTo);
          yield { seq: pos, type: 'truncated', data: d };
        }
        continue;
      }
      const offset = Number(m.headers?.get('Hp-Offset'));
      if (!Number.isSafeInteger(offset) || m.data.length === 0) {
        logger.warn({ commandId, seq: m.seq }, 'skipping a LOGS message without an offset');
        continue;
      }
      const end = offset + m.data.length;
      if (end <= pos) continue; // before the resume point
      // A chunk past `pos` with no truncation marker between them: the tail of a capped output whose
      // marker lies before the resume point. Nothing in [pos, offset) was ever stored.
      const start = Math.max(pos, offset);
      const data = Buffer.from(m.data.subarray(start - offset));
      pos = end;
      yield { seq: pos, type: 'chunk', data: { offset: start, stream: m.headers?.get('Hp-Stream') ?? 'stdout', data: data.toString('base64') } };
    }
  }

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
