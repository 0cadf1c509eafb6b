import { AckPolicy, DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { MalformedEvent } from '@handplane/contracts';
import { isDomainError } from '@handplane/kernel';
import type { Logger } from '../logger';
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

  const handle = async (m: JsMsg) => {
    try {
      await o.handler(m);
      m.ack();
    } catch (e) {
      if (e instanceof MalformedEvent || (isDomainError(e) && !e.retryable)) {
        o.logger.error({ err: e, subject: m.subject, seq: m.seq }, 'message rejected for good; terminating it');
        m.term(); // no reason text: servers before 2.10 ignore '+TERM <reason>'
        return;
      }
      const deliveries = m.info.deliveryCount;
      if (deliveries >= maxDeliver) {
        o.logger.error({ err: e, subject: m.subject, seq: m.seq, deliveries }, 'message failed on its last delivery; terminating it');
        m.term();
        return;
      }
      const delay = Math.min(30_000, 200 * 2 ** Math.min(deliveries, 8));
      o.logger.warn({ err: e, subject: m.subject, seq: m.seq, deliveries, delay }, 'message handling failed; will retry');
      m.nak(delay);
    }
  };

  const loop = async () => {
    while (!stopped) {
      try {
        iter = await consumer.consume({ max_messages: Math.max(limit * 2, 16) });
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
