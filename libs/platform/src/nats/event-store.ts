import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, type JsMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { context, trace } from '@opentelemetry/api';
import { Conflict, Unavailable, type Decider } from '@handplane/kernel';
import { encodeEvent } from '@handplane/contracts';
import type { ConversationEvent, SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { telemetryOf } from '../telemetry/metrics';
import { injectNatsHeaders } from '../telemetry/propagation';
import { contextFromTraceparent, inSpan, SpanKind } from '../telemetry/tracing';
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
  /** How long one `read` may take before it gives up with Unavailable (default 20 s). */
  private readonly readTimeoutMs: number;

  constructor(
    private readonly nats: Nats,
    opts: { readTimeoutMs?: number } = {},
  ) {
    this.readTimeoutMs = opts.readTimeoutMs ?? 20_000;
  }

  /**
   * Reads every event of one subject, in order, decoded. Bounded: a read that has not reached the
   * subject's last event within `readTimeoutMs` (an ordered consumer that JetStream keeps failing to
   * create re-creates itself forever) throws Unavailable instead of holding its caller for good; a
   * partial history is never returned. The read's ephemeral consumer is deleted at once: closing an
   * ordered consumer leaves it on the server for its 5 min inactivity threshold, and thousands of
   * them (one per task load) slow every JetStream call on the stream until its API times out.
   */
  // A string filter (not an array) keeps this working on servers before 2.10.
  async read<E>(stream: string, subject: string, decode: (data: Uint8Array) => E): Promise<{ events: StoredEvent<E>[]; lastSeq: number }> {
    const last = await this.nats.jsm.streams.getMessage(stream, { last_by_subj: subject });
    if (!last) return { events: [], lastSeq: 0 };
    const consumer = await this.nats.js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.All });
    const events: StoredEvent<E>[] = [];
    const iter = await consumer.consume({ max_messages: 512 });
    let complete = false;
    const timer = setTimeout(() => void iter.close().catch(() => undefined), this.readTimeoutMs);
    try {
      for await (const m of iter) {
        events.push({ seq: m.seq, subject: m.subject, event: decode(m.data) });
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
    if (!complete) throw new Unavailable(`reading ${subject} did not reach sequence ${last.seq} within ${this.readTimeoutMs} ms`);
    return { events, lastSeq: last.seq };
  }

  /** Appends events to one subject; throws Conflict when the subject moved since `expectedLastSeq`. */
  async append(subject: string, events: readonly AnyEvent[], opts: AppendOptions): Promise<number> {
    return this.traced(events, () => this.appendAll(subject, events, opts));
  }

  /** A PRODUCER span around a write when the connection belongs to a service (see `bindTelemetry`). */
  private traced<T>(events: readonly AnyEvent[], write: () => Promise<T>): Promise<T> {
    const metrics = telemetryOf(this.nats.nc);
    if (!metrics || events.length === 0) return write();
    // Outside any span (a sweep), the trace the event itself carries is the parent, if any.
    const parent = trace.getSpan(context.active()) ? context.active() : contextFromTraceparent(events[0]!.metadata.traceparent);
    return inSpan(metrics.service, `publish ${events.map((e) => e.type).join(',')}`, { kind: SpanKind.PRODUCER, parent }, write);
  }

  private async appendAll(subject: string, events: readonly AnyEvent[], opts: AppendOptions): Promise<number> {
    let expected = opts.expectedLastSeq;
    for (let i = 0; i < events.length; i++) {
      const event = events[i]!;
      const h = traceHeaders(event);
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
    return this.traced([event], async () => {
      try {
        const ack = await this.nats.js.publish(subject, encodeEvent(event), { msgID: msgId, headers: traceHeaders(event) });
        return { seq: ack.seq, duplicate: ack.duplicate };
      } catch (e) {
        throw new Unavailable(`publish to ${subject} failed: ${(e as Error).message}`, { cause: e });
      }
    });
  }
}

/**
 * Headers with the trace context of the write: the active span when there is one (the hop that
 * publishes), else the `traceparent` the event carries in its metadata.
 */
function traceHeaders(event: AnyEvent) {
  const h = injectNatsHeaders(natsHeaders());
  if (!h.has('traceparent') && event.metadata.traceparent) h.set('traceparent', event.metadata.traceparent);
  return h;
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
