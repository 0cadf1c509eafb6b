import { decodeConversationEvent } from '@handplane/contracts';
import { testNats, waitFor } from '@handplane/testing';
import { createLogger } from '../logger';
import { EventStore } from './event-store';
import { runDurableConsumer } from './durable-consumer';

const at = '2026-01-01T00:00:00.000Z';

describe('runDurableConsumer (real JetStream)', () => {
  let env: Awaited<ReturnType<typeof testNats>>;
  beforeAll(async () => {
    env = await testNats('dc');
  });
  afterAll(() => env.close());

  it('terminates a malformed message without blocking the ones behind it, and retries a failing one', async () => {
    const store = new EventStore(env.nats);
    const subject = env.topology.conv('c1');
    await env.nats.js.publish(subject, Buffer.from('not json at all'));
    await store.publish(subject, { type: 'wait.invalidated', data: { reason: 'first' }, metadata: { at } }, 'm1');
    await store.publish(subject, { type: 'wait.invalidated', data: { reason: 'flaky' }, metadata: { at } }, 'm2');

    const seen: string[] = [];
    let flakyFailures = 0;
    const consumer = await runDurableConsumer(env.nats, {
      stream: env.topology.streams.CONV,
      durable: env.topology.durable('probe'),
      filterSubject: env.topology.all.conv,
      logger: createLogger('test', 'silent'),
      handler: async (m) => {
        const e = decodeConversationEvent(m.data);
        const reason = (e.data as { reason: string }).reason;
        if (reason === 'flaky' && flakyFailures++ < 2) throw new Error('transient');
        seen.push(reason);
      },
    });
    try {
      await waitFor(() => seen.length === 2, 20_000, 'both valid messages');
      expect(seen).toEqual(['first', 'flaky']);
      expect(flakyFailures).toBe(3);
      // Acks are asynchronous: wait until the server has every message settled (acked or terminated).
      await waitFor(async () => {
        const info = await env.nats.jsm.consumers.info(env.topology.streams.CONV, env.topology.durable('probe'));
        return info.num_pending + info.num_ack_pending === 0;
      }, 10_000, 'all messages settled');
    } finally {
      await consumer.stop();
    }
  });
});
