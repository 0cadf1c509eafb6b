import { DeliverPolicy } from '@nats-io/jetstream';
import { decodeConversationEvent, MalformedEvent, type Topology } from '@handplane/contracts';
import type { EpochEnded } from '@handplane/domain';
import { Unavailable } from '@handplane/kernel';
import type { Projection } from '@handplane/platform';
import type { Pool, PoolClient } from 'pg';
import type { CoordinatorDeps } from './deps';

/** The projection's name (CONV → `conversation_epochs`). */
export const EPOCHS_PROJECTION = 'coordinator-epochs';

/** The epoch a conversation is in and the CONV sequence of the `epoch.ended` that opened it. */
export interface KnownEpoch {
  readonly epoch: number;
  readonly endedSeq: number;
}

/**
 * The conversation's epoch as the read model knows it; null while no epoch of it ever ended (then
 * the epoch its callers name is the current one).
 */
export async function knownEpoch(db: Pool | PoolClient, conversationId: string): Promise<KnownEpoch | null> {
  const r = await db.query<{ epoch: number; ended_seq: string }>('SELECT epoch, ended_seq FROM conversation_epochs WHERE conversation_id = $1', [conversationId]);
  return r.rowCount ? { epoch: r.rows[0]!.epoch, endedSeq: Number(r.rows[0]!.ended_seq) } : null;
}

/** Records that `epoch` began at CONV sequence `endedSeq`. Epochs only go up, so applying one twice, or late, changes nothing. */
export async function recordEpoch(db: Pool | PoolClient, conversationId: string, epoch: number, endedSeq: number): Promise<void> {
  await db.query(
    `INSERT INTO conversation_epochs (conversation_id, epoch, ended_seq) VALUES ($1, $2, $3)
     ON CONFLICT (conversation_id) DO UPDATE SET epoch = GREATEST(conversation_epochs.epoch, EXCLUDED.epoch),
       ended_seq = GREATEST(conversation_epochs.ended_seq, EXCLUDED.ended_seq), updated_at = now()`,
    [conversationId, epoch, endedSeq],
  );
}

const MARK = Buffer.from('"epoch.ended"');
/** How long scanning a conversation's subject for `epoch.ended` may take. */
const SCAN_TIMEOUT_MS = 60_000;

/** Decodes an `epoch.ended`, or null for anything else (a cheap byte test first: CONV carries all the output). */
function epochEnded(data: Uint8Array): EpochEnded | null {
  if (!Buffer.from(data.buffer, data.byteOffset, data.byteLength).includes(MARK)) return null;
  try {
    const e = decodeConversationEvent(data);
    return e.type === 'epoch.ended' ? e : null;
  } catch (err) {
    if (err instanceof MalformedEvent) return null;
    throw err;
  }
}

const conversationOf = (subject: string) => subject.slice(subject.lastIndexOf('.') + 1);

/** `conversation_epochs` from CONV, so the table can be rebuilt from the stream like every read model. */
export function epochsProjection(t: Topology): Projection {
  return {
    name: EPOCHS_PROJECTION,
    stream: t.streams.CONV,
    tables: ['conversation_epochs'],
    // `updated_at` is when the row was last written, not something the events say.
    volatileColumns: { conversation_epochs: ['updated_at'] },
    async apply(c, m) {
      const e = epochEnded(m.data);
      if (e) await recordEpoch(c, conversationOf(m.subject), e.data.nextEpoch, m.seq);
    },
  };
}

/**
 * Reads `conv.<conversationId>` after `afterSeq` for `epoch.ended` events. Answers the subject's last
 * sequence (what an append must expect to prove nothing came in between) and the latest epoch begun.
 */
export async function scanEpochs(d: Pick<CoordinatorDeps, 'nats' | 't'>, conversationId: string, afterSeq: number): Promise<{ lastSeq: number; latest: KnownEpoch | null }> {
  const stream = d.t.streams.CONV;
  const subject = d.t.conv(conversationId);
  const last = await d.nats.jsm.streams.getMessage(stream, { last_by_subj: subject });
  if (!last || last.seq <= afterSeq) return { lastSeq: last?.seq ?? 0, latest: null };
  // A string filter (not an array) keeps this working on servers before 2.10.
  const consumer = await d.nats.js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSeq + 1 });
  const iter = await consumer.consume({ max_messages: 512 });
  let latest: KnownEpoch | null = null;
  let complete = false;
  // Bounded, and the ephemeral consumer deleted at once (as EventStore.read does).
  const timer = setTimeout(() => void iter.close().catch(() => undefined), SCAN_TIMEOUT_MS);
  try {
    for await (const m of iter) {
      const e = epochEnded(m.data);
      if (e && (!latest || e.data.nextEpoch > latest.epoch)) latest = { epoch: e.data.nextEpoch, endedSeq: m.seq };
      if (m.seq >= last.seq) {
        complete = true;
        break;
      }
    }
  } finally {
    clearTimeout(timer);
    await iter.close().catch(() => undefined);
    void consumer.delete().catch(() => undefined);
  }
  if (!complete) throw new Unavailable(`reading ${subject} did not reach sequence ${last.seq} in time`);
  return { lastSeq: last.seq, latest };
}
