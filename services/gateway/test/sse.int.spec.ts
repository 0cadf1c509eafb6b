import type { ConversationEvent } from '@handplane/domain';
import { readSse, waitFor } from '@handplane/testing';
import { expectError, startHarness, type Harness } from './harness';
import type { SseEvent } from './sse-client';

/** A small SSE reader over fetch: collects events and comment lines until closed. */
function openSse(baseUrl: string, path: string, token: string, headers: Record<string, string> = {}) {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  const ac = new AbortController();
  const response = fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream', ...headers }, signal: ac.signal });
  const done = (async () => {
    const r = await response;
    for await (const m of readSse(r.body!)) {
      if (m.type === 'comment') comments.push(m.line);
      else if (m.event) events.push({ id: m.id, event: m.event, data: m.data === undefined ? undefined : JSON.parse(m.data) } as SseEvent);
    }
  })().catch((e) => {
    if ((e as Error).name !== 'AbortError') throw e;
  });
  return { events, comments, response, done, close: () => ac.abort() };
}

describe('gateway SSE (real NATS + Postgres)', () => {
  let h: Harness;
  let token: string;
  const at = '2026-01-01T00:00:00.000Z';
  beforeAll(async () => {
    h = await startHarness('gwsse', { SSE_HEARTBEAT_MS: '200' });
    token = await h.token('alice', 'acme');
  });
  afterAll(() => h?.stop());

  const say = (text: string, n: number): ConversationEvent => ({ type: 'assistant.message', data: { runId: 'r1', text: `${text} ${n}` }, metadata: { at } });
  const publish = async (id: string, text: string, n: number) => (await h.store.publish(h.nats.topology.conv(id), say(text, n), `${id}:${text}:${n}`)).seq;
  const consumers = async () => (await h.nats.nats.jsm.streams.info(h.nats.topology.streams.CONV)).state.consumer_count;

  it('streams past and live events with stream ids, only of this conversation, with the SSE headers', async () => {
    const id = await h.conversation(['alice', 'acme']);
    const other = await h.conversation(['alice', 'acme']);
    const seqs = [await publish(id, 'past', 1), await publish(other, 'elsewhere', 1), await publish(id, 'past', 2)];
    const sse = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token);
    const r = await sse.response;
    expect(r.status).toBe(200);
    expect([r.headers.get('content-type'), r.headers.get('cache-control'), r.headers.get('x-accel-buffering')]).toEqual(['text/event-stream', 'no-cache', 'no']);
    await waitFor(() => sse.events.length >= 4, 10_000, 'the past events');
    const live = await publish(id, 'live', 1);
    await waitFor(() => sse.events.some((e) => e.id === String(live)), 10_000, 'the live event');
    sse.close();
    await sse.done;
    expect(sse.events.map((e) => e.event)).toEqual(['conversation.created', 'member.added', 'assistant.message', 'assistant.message', 'assistant.message']);
    expect(sse.events.slice(2).map((e) => [Number(e.id), e.data])).toEqual([
      [seqs[0], { runId: 'r1', text: 'past 1' }],
      [seqs[2], { runId: 'r1', text: 'past 2' }],
      [live, { runId: 'r1', text: 'live 1' }],
    ]);
  });

  it('resumes after Last-Event-ID or ?after= with nothing lost or repeated, and pings', async () => {
    const id = await h.conversation(['alice', 'acme']);
    for (let n = 1; n <= 3; n++) await publish(id, 'm', n);
    const first = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token);
    await waitFor(() => first.events.length >= 5, 10_000, 'the first five events');
    first.close();
    await first.done;
    const lastSeen = first.events[first.events.length - 1]!.id;

    // Written while nobody listens.
    const missed = [await publish(id, 'm', 4), await publish(id, 'm', 5)];
    const byHeader = openSse(h.baseUrl, `/v1/conversations/${id}/events?after=1`, token, { 'last-event-id': lastSeen });
    const byQuery = openSse(h.baseUrl, `/v1/conversations/${id}/events?after=${lastSeen}`, token);
    await waitFor(() => byHeader.events.length >= 2 && byQuery.events.length >= 2, 10_000, 'the missed events');
    const more = await publish(id, 'm', 6);
    await waitFor(() => byHeader.events.length >= 3 && byQuery.events.length >= 3, 10_000, 'the next live event');
    await waitFor(() => byHeader.comments.includes(': ping'), 5_000, 'a ping');
    byHeader.close();
    byQuery.close();
    await Promise.all([byHeader.done, byQuery.done]);
    for (const resumed of [byHeader, byQuery]) {
      expect(resumed.events.map((e) => Number(e.id))).toEqual([...missed, more]);
      expect(resumed.events.map((e) => (e.data as { text: string }).text)).toEqual(['m 4', 'm 5', 'm 6']);
    }
    const all = [...first.events, ...byHeader.events].map((e) => e.id);
    expect(new Set(all).size).toBe(all.length);
    expect(all).toHaveLength(8);
  });

  it('removes its consumer when the client leaves', async () => {
    const id = await h.conversation(['alice', 'acme']);
    const baseline = await consumers();
    const sse = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token);
    await waitFor(() => sse.events.length >= 2, 10_000, 'the first events');
    expect(await consumers()).toBe(baseline + 1);
    sse.close();
    await sse.done;
    await waitFor(async () => (await consumers()) === baseline, 10_000, 'the consumer to be removed');
  });

  it('refuses a bad resume point with 422 and a non-member with 404', async () => {
    const id = await h.conversation(['alice', 'acme']);
    for (const q of ['?after=-1', '?after=abc', '?after=1.5']) expectError(await h.call('GET', `/v1/conversations/${id}/events${q}`, token), 422, 'validation');
    expectError(await h.call('GET', `/v1/conversations/${id}/events`, token, undefined, { 'last-event-id': 'x' }), 422, 'validation');
    expectError(await h.call('GET', `/v1/conversations/${id}/events`, ['bob', 'acme']), 404, 'not_found');
  });

  // Last: it stops the gateway.
  it('ends open streams when the gateway stops', async () => {
    const id = await h.conversation(['alice', 'acme']);
    const sse = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token);
    await waitFor(() => sse.events.length >= 2, 10_000, 'the first events');
    await h.gateway.stop();
    await sse.done; // the response ended: the client sees the end of the stream and would reconnect
    expect(sse.events).toHaveLength(2);
  });
});
