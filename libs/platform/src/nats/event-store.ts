import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, type JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { Conflict, Unavailable, type Decider } from '@handplane/kernel';
import { encodeEvent } from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import type { Nats } from './connect';

/** An event read back from a stream, with its stream sequence. */
export interface StoredEvent<E> {
  readonly seq: number;
  readonly subject: string;
  readonly event: E;
}

type AnyEvent = TaskEvent | SandboxCommandEvent | ConversationEvent;

export interface AppendOptions {
  /** Last sequence of the subject the decision was made on (0 = the subject must be empty). */
  readonly expectedLastSeq: number;
  /** Base of the `Nats-Msg-Id`; each event gets `<msgId>:<index>` so a retried append is a no-op. */
  readonly msgId: string;
}

function isWrongLastSequence(e: unknown): boolean {
  return e instanceof JetStreamApiError && (e.code === JetStreamApiCodes.StreamWrongLastSequence || e.code === 10164);
}

/**
 * The event log over JetStream: one aggregate per subject, appends with optimistic concurrency
 * (`Nats-Expected-Last-Subject-Sequence`) and a `Nats-Msg-Id` per event.
 */
export class EventStore {
  constructor(private readonly nats: Nats) {}

  /** Reads every event of one subject, in order, decoded. */
  // A string filter (not an array) keeps this working on servers before 2.10.
  async read<E>(stream: string, subject: string, decode: (data: Uint8Array) => E): Promise<{ events: StoredEvent<E>[]; lastSeq: number }> {
    const last = await this.nats.jsm.streams.getMessage(stream, { last_by_subj: subject });
    if (!last) return { events: [], lastSeq: 0 };
    const consumer = await this.nats.js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
    const events: StoredEvent<E>[] = [];
    const iter = await consumer.consume({ max_messages: 512 });
    try {
      for await (const m of iter) {
        events.push({ seq: m.seq, subject: m.subject, event: decode(m.data) });
        if (m.seq >= last.seq) break;
      }
    } finally {
      await iter.close().catch(() => undefined);
    }
    return { events, lastSeq: last.seq };
  }

  /** Appends events to one subject; throws Conflict when the subject moved since `expectedLastSeq`. */
  async append(subject: string, events: readonly AnyEvent[], opts: AppendOptions): Promise<number> {
    let expected = opts.expectedLastSeq;
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      const h = natsHeaders();
      if (event.metadata.traceparent) h.set('traceparent', event.metadata.traceparent);
      try {
        const ack = await this.nats.js.publish(subject, encodeEvent(event), {
          msgID: events.length === 1 ? opts.msgId : `${opts.msgId}:${i}`,
          expect: { lastSubjectSequence: expected },
          headers: h,
        });
        expected = ack.seq;
      } catch (e) {
        if (isWrongLastSequence(e)) throw new Conflict(`${subject} moved past sequence ${expected}`, { cause: e });
        throw new Unavailable(`append to ${subject} failed: ${(e as Error).message}`, { cause: e });
      }
    }
    return expected;
  }

  /** Publishes one event with no concurrency expectation (feeds such as CONV notices), deduplicated by msgId. */
  async publish(subject: string, event: AnyEvent, msgId: string): Promise<{ seq: number; duplicate: boolean }> {
    const h = natsHeaders();
    if (event.metadata.traceparent) h.set('traceparent', event.metadata.traceparent);
    try {
      const ack = await this.nats.js.publish(subject, encodeEvent(event), { msgID: msgId, headers: h });
      return { seq: ack.seq, duplicate: ack.duplicate };
    } catch (e) {
      throw new Unavailable(`publish to ${subject} failed: ${(e as Error).message}`, { cause: e });
    }
  }
}

/**
 * Load → decide → append, reloading and deciding again on a concurrency conflict.
 * Returns the new events (possibly none: the command was already satisfied) and the state after them.
 */
export async function handleCommand<S, C, E extends AnyEvent>(args: {
  store: EventStore;
  stream: string;
  subject: string;
  decode: (data: Uint8Array) => E;
  decider: Decider<S, C, E>;
  command: C;
  msgId: (events: readonly E[], lastSeq: number) => string;
  maxAttempts?: number;
}): Promise<{ events: E[]; state: S; lastSeq: number }> {
  const max = args.maxAttempts ?? 8;
  for (let attempt = 1; ; attempt++) {
    const { events: history, lastSeq } = await args.store.read(args.stream, args.subject, args.decode);
    let state = history.reduce((s, e) => args.decider.evolve(s, e.event), args.decider.initialState());
    const produced = args.decider.decide(args.command, state);
    if (produced.length === 0) return { events: [], state, lastSeq };
    try {
      const seq = await args.store.append(args.subject, produced, { expectedLastSeq: lastSeq, msgId: args.msgId(produced, lastSeq) });
      state = produced.reduce((s, e) => args.decider.evolve(s, e), state);
      return { events: produced, state, lastSeq: seq };
    } catch (e) {
      if (e instanceof Conflict && attempt < max) continue;
      throw e;
    }
  }
}

export type { JsMsg };
