import type { ConversationEvent } from '@handplane/domain';
import { waitFor } from '@handplane/testing';
import { publishConv } from './doubles';
import { startHarness, type Harness } from './harness';
import { openSse, type SseStream } from './sse-client';

const at = '2026-01-01T00:00:00.000Z';
const output = (n: number, text: string): ConversationEvent => ({ type: 'command.output', data: { taskId: 't1', commandId: 'c1', offset: n, text, bytes: Buffer.byteLength(text) }, metadata: { at } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resumes from the last complete event a stream delivered (what EventSource does with Last-Event-ID). */
const lastId = (s: SseStream, fallback: string) => s.events[s.events.length - 1]?.id ?? fallback;

describe('SSE that survives churn and slow clients (real NATS + Postgres)', () => {
  let h: Harness;
  let token: string;
  const consumers = async () => (await h.nats.nats.jsm.streams.info(h.nats.topology.streams.CONV)).state.consumer_count;
  beforeAll(async () => {
    h = await startHarness('gwchurn', { SSE_HEARTBEAT_MS: '300', SSE_MAX_BUFFER_BYTES: '65536' });
    token = await h.token('alice', 'acme');
  });
  afterAll(() => h?.stop());

  it('a client dropped every second or two while a chatty command runs loses and repeats nothing', async () => {
    const id = await h.conversation(['alice', 'acme']);
    const baseline = await consumers();
    const published: number[] = [];
    let running = true;
    // The chatty command: output events as fast as the ingestor would publish them.
    const chatter = (async () => {
      for (let n = 0; running; n++) {
        published.push(await publishConv(h, id, output(n, `line ${n}\n`), `churn:${id}:${n}`));
        if (n % 20 === 0) await sleep(5);
      }
    })();

    const received: string[] = [];
    let resumeFrom = '0';
    let reconnects = 0;
    const until = Date.now() + 8_000;
    while (Date.now() < until) {
      const s = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token, { 'last-event-id': resumeFrom });
      expect(await s.status).toBe(200);
      await sleep(700 + Math.floor(Math.random() * 800));
      s.close(); // dropped mid-stream, possibly mid-event
      await s.ended;
      received.push(...s.events.map((e) => e.id));
      resumeFrom = lastId(s, resumeFrom);
      reconnects++;
    }
    running = false;
    await chatter;
    // The last connections read to the end. Replaying the backlog, a reader on a loaded machine may
    // be cut off by the slow-client bound; it then resumes with Last-Event-ID, as a real client does.
    const final = String(published[published.length - 1]);
    const deadline = Date.now() + 60_000;
    for (let done = false; !done; ) {
      const last = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token, { 'last-event-id': resumeFrom });
      let cut = false;
      void last.ended.then(() => (cut = true));
      await waitFor(() => last.events.some((e) => e.id === final) || cut, 60_000, 'the last event or the end of the stream');
      last.close();
      await last.ended;
      received.push(...last.events.map((e) => e.id));
      resumeFrom = lastId(last, resumeFrom);
      done = last.events.some((e) => e.id === final);
      if (!done && Date.now() > deadline) throw new Error(`the last event ${final} never arrived (resumed from ${resumeFrom})`);
    }

    expect(reconnects).toBeGreaterThanOrEqual(4);
    expect(published.length).toBeGreaterThan(100);
    // The first two are conversation.created and member.added; then every output event once, in order.
    const outputs = received.slice(2).map(Number);
    expect(outputs).toEqual(published);
    // Removed when each stream ends; an ordered consumer that reset itself under load leaves its
    // old server-side consumer to the inactivity threshold (30 s), so allow for that.
    await waitFor(async () => (await consumers()) === baseline, 45_000, 'every stream’s consumer to be removed');
  });

  it('cuts off a client that stops reading, cleanly, and it resumes with Last-Event-ID losing nothing', async () => {
    const id = await h.conversation(['alice', 'acme']);
    const baseline = await consumers();
    const slow = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token);
    await waitFor(() => slow.events.length >= 2, 10_000, 'the first events');
    slow.pause();
    const published: number[] = [];
    const big = 'x'.repeat(32 * 1024);
    // Keep writing until the gateway gives up on the client (kernel buffers hold a few MB first).
    for (let n = 0; (await consumers()) > baseline; ) {
      if (n >= 4000) throw new Error('the slow client was never cut off');
      for (const end = n + 25; n < end; n++) published.push(await publishConv(h, id, output(n, big), `slow:${id}:${n}`));
    }
    slow.resume();
    await slow.ended;
    expect(slow.comments).toContain(': slow client, reconnect with Last-Event-ID');
    const got = slow.events.slice(2).map((e) => Number(e.id));
    expect(got.length).toBeLessThan(published.length);
    expect(got).toEqual(published.slice(0, got.length));

    const resumed = openSse(h.baseUrl, `/v1/conversations/${id}/events`, token, { 'last-event-id': lastId(slow, '0') });
    const final = String(published[published.length - 1]);
    await waitFor(() => resumed.events.some((e) => e.id === final), 30_000, 'the rest');
    resumed.close();
    expect([...got, ...resumed.events.map((e) => Number(e.id))]).toEqual(published);
  });
});
