import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { MalformedEvent } from '@handplane/contracts';
import { isDomainError } from '@handplane/kernel';
import type { Logger } from '../logger';
import { telemetryOf } from '../telemetry/metrics';
import { extractNatsHeaders } from '../telemetry/propagation';
import { inSpan } from '../telemetry/tracing';
import type { Nats } from './connect';

export interface DurableConsumerOptions {
  readonly stream: string;
  /** Durable name, shared by every replica of the service: replicas split the work. */
  readonly durable: string;
  /** One subject filter (servers before 2.10 take only one); omitted = the whole stream. */
  readonly filterSubject?: string;
  readonly handler: (msg: JsMsg) => Promise<void>;
  readonly logger: Logger;
  /** Deliveries before a failing message is given up on (it is then logged and terminated). */
  readonly maxDeliver?: number;
  readonly ackWaitMs?: number;
  /** Where a new consumer starts. */
  readonly deliverPolicy?: DeliverPolicy;
  /** Messages handled at once by this instance (order within a subject is not guaranteed above 1). */
  readonly concurrency?: number;
}

/**
 * Options for every long-lived `consume()`. nats.js re-checks a consumer after a reconnect and, when
 * that check fails (JetStream still loading its store right after a server restart), waits
 * jitter(expires) = 0.5–1.5 × expires before trying again: with the default 30 s expiry a consumer
 * sat idle 15–45 s after every NATS restart (measured by the chaos suite). A 3 s expiry bounds that
 * wait to 1.5–4.5 s and the idle heartbeat to 1.5 s, for one pull request every 3 s when idle.
 */
export const LIVE_CONSUME = { expires: 3_000 } as const;

/** A running consumer; `stop` drains the in-flight handlers. */
export interface RunningConsumer {
  stop(): Promise<void>;
}

/**
 * Runs a durable pull consumer: success acks; a malformed message or a non-retryable domain error is
 * logged and terminated so it never blocks the ones behind it; anything else is nak'ed with backoff,
 * and after `maxDeliver` deliveries the server stops redelivering it.
 */
export async function runDurableConsumer(nats: Nats, o: DurableConsumerOptions): Promise<RunningConsumer> {
  const maxDeliver = o.maxDeliver ?? 20;
  const ackWaitNs = (o.ackWaitMs ?? 30_000) * 1_000_000;
  const cfg = {
    durable_name: o.durable,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: o.deliverPolicy ?? DeliverPolicy.All,
    ...(o.filterSubject ? { filter_subject: o.filterSubject } : {}),
    max_deliver: maxDeliver,
    ack_wait: ackWaitNs,
  };
  const existing = await nats.jsm.consumers.info(o.stream, o.durable).catch(() => null);
  if (!existing) {
    await nats.jsm.consumers.add(o.stream, cfg).catch(async (e) => {
      if (!(await nats.jsm.consumers.info(o.stream, o.durable).catch(() => null))) throw e;
    });
  } else {
    await nats.jsm.consumers.update(o.stream, o.durable, { ...(o.filterSubject ? { filter_subject: o.filterSubject } : {}), max_deliver: maxDeliver, ack_wait: ackWaitNs });
  }
  const consumer = await nats.js.consumers.get(o.stream, o.durable);
  let stopped = false;
  let iter: ConsumerMessages | undefined;
  const inflight = new Set<Promise<void>>();
  const limit = Math.max(1, o.concurrency ?? 1);

  const metrics = telemetryOf(nats.nc);
  metrics?.watchConsumer(nats, o.stream, o.durable);
  const count = (outcome: 'ack' | 'nak' | 'term') => metrics?.consumed.inc({ consumer: o.durable, outcome });
  const settle = async (m: JsMsg) => {
    try {
      await o.handler(m);
      m.ack();
      count('ack');
    } catch (e) {
      if (e instanceof MalformedEvent || (isDomainError(e) && !e.retryable)) {
        o.logger.error({ err: e, subject: m.subject, seq: m.seq }, 'message rejected for good; terminating it');
        m.term(); // no reason text: servers before 2.10 ignore '+TERM <reason>'
        count('term');
        return;
      }
      const deliveries = m.info.deliveryCount;
      if (deliveries >= maxDeliver) {
        o.logger.error({ err: e, subject: m.subject, seq: m.seq, deliveries }, 'message failed on its last delivery; terminating it');
        m.term();
        count('term');
        return;
      }
      const delay = Math.min(30_000, 200 * 2 ** Math.min(deliveries, 8));
      o.logger.warn({ err: e, subject: m.subject, seq: m.seq, deliveries, delay }, 'message handling failed; will retry');
      m.nak(delay);
      count('nak');
    }
  };
  // Each delivery is a CONSUMER span, child of the span that published the message (its headers).
  const handle = (m: JsMsg): Promise<void> =>
    metrics
      ? inSpan(metrics.service, `consume ${o.durable}`, { kind: SpanKind.CONSUMER, parent: extractNatsHeaders(m.headers, ROOT_CONTEXT), attributes: { 'messaging.consumer.group.name': o.durable, 'messaging.message.delivery_count': m.info.deliveryCount } }, () => settle(m))
      : settle(m);

  const loop = async () => {
    while (!stopped) {
      try {
        iter = await consumer.consume({ ...LIVE_CONSUME, max_messages: Math.max(limit * 2, 16) });
        for await (const m of iter) {
          const p = handle(m).finally(() => inflight.delete(p));
          inflight.add(p);
          if (inflight.size >= limit) await Promise.race(inflight);
          if (stopped) break;
        }
      } catch (e) {
        if (stopped) break;
        o.logger.warn({ err: e, durable: o.durable }, 'consumer interrupted; resuming');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  const done = loop();
  return {
    async stop() {
      stopped = true;
      await iter?.close().catch(() => undefined);
      await Promise.allSettled([...inflight]);
      await done.catch(() => undefined);
    },
  };
}
