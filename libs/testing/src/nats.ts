import { randomBytes } from 'node:crypto';
import { encodeEvent, topology, type Topology } from '@handplane/contracts';
import { connectNats, deleteStreams, ensureStreams, type Nats } from '@handplane/platform';

export const NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** A prefix no other test uses, so streams and subjects never collide. */
export function uniquePrefix(label = 't'): string {
  return `${label.replace(/[^A-Za-z0-9]/g, '').slice(0, 12)}${randomBytes(5).toString('hex')}`;
}

/** A connection to the real NATS with this test's own streams; `close` deletes them. */
export async function testNats(label = 't'): Promise<{ nats: Nats; topology: Topology; prefix: string; close: () => Promise<void> }> {
  const prefix = uniquePrefix(label);
  const t = topology(prefix);
  const nats = await connectNats(NATS_URL, `test-${prefix}`);
  await ensureStreams(nats.jsm, t);
  return {
    nats,
    topology: t,
    prefix,
    close: async () => {
      await deleteStreams(nats.jsm, t);
      const kvStream = `KV_${t.runnersBucket}`;
      await nats.jsm.streams.delete(kvStream).catch(() => undefined);
      await nats.nc.drain().catch(() => undefined);
    },
  };
}

/**
 * Publishes the conversation's `conversation.created` (as the gateway does) unless its subject holds
 * one already: the coordinator refuses to start a task in a conversation it cannot find in CONV.
 */
export async function ensureConversation(nats: Nats, t: Topology, conversationId: string, tenant: string, createdBy = 'alice'): Promise<void> {
  const subject = t.conv(conversationId);
  const last = await nats.jsm.streams.getMessage(t.streams.CONV, { last_by_subj: subject }).catch(() => null);
  if (last) return;
  const event = { type: 'conversation.created' as const, data: { conversationId, tenant, title: '', createdBy }, metadata: { at: new Date().toISOString(), actor: createdBy } };
  await nats.js.publish(subject, encodeEvent(event), { msgID: `created:${conversationId}` });
}
