import { Conflict, Unavailable } from '@handplane/kernel';
import { decodeTaskEvent } from '@handplane/contracts';
import type { TaskEvent } from '@handplane/domain';
import { testNats, waitFor } from '@handplane/testing';
import type { Nats } from './connect';
import { EventStore } from './event-store';

const backgrounded = (taskId: string, at: string): TaskEvent => ({
  type: 'TaskBackgrounded',
  data: { taskId, commandId: 'c1', attempt: 1, backgroundedAt: at },
  metadata: { at },
});

describe('EventStore (real JetStream)', () => {
  let env: Awaited<ReturnType<typeof testNats>>;
  let store: EventStore;
  beforeAll(async () => {
    env = await testNats('es');
    store = new EventStore(env.nats);
  });
  afterAll(() => env.close());

  it('reads an empty subject as no events at sequence 0', async () => {
    const r = await store.read(env.topology.streams.TASKS, env.topology.task('nothing'), decodeTaskEvent);
    expect(r).toEqual({ events: [], lastSeq: 0 });
  });

  it('appends with expected sequences and reads back in order', async () => {
    const subject = env.topology.task('t1');
    const s1 = await store.append(subject, [backgrounded('t1', '2026-01-01T00:00:00.000Z')], { expectedLastSeq: 0, msgId: 'a' });
    const s2 = await store.append(subject, [backgrounded('t1', '2026-01-01T00:00:01.000Z'), backgrounded('t1', '2026-01-01T00:00:02.000Z')], { expectedLastSeq: s1, msgId: 'b' });
    const r = await store.read(env.topology.streams.TASKS, subject, decodeTaskEvent);
    expect(r.lastSeq).toBe(s2);
    expect(r.events.map((e) => (e.event.data as { backgroundedAt: string }).backgroundedAt)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:01.000Z',
      '2026-01-01T00:00:02.000Z',
    ]);
  });

  it('leaves no consumer behind on the stream after its reads (thousands piled up under load)', async () => {
    const subject = env.topology.task('t-leak');
    await store.append(subject, [backgrounded('t-leak', '2026-01-01T00:00:00.000Z')], { expectedLastSeq: 0, msgId: 'leak' });
    for (let i = 0; i < 5; i++) expect((await store.read(env.topology.streams.TASKS, subject, decodeTaskEvent)).events).toHaveLength(1);
    // Without the delete, each read's ordered consumer stays for its 5 min inactivity threshold.
    const count = async () => (await env.nats.jsm.streams.info(env.topology.streams.TASKS)).state.consumer_count;
    await waitFor(async () => (await count()) === 0, 20_000, 'the read consumers to be gone');
  });

  it('gives up with Unavailable, never a partial history, when the read cannot reach the last event in time', async () => {
    const subject = env.topology.task('t-stuck');
    await store.append(subject, [backgrounded('t-stuck', '2026-01-01T00:00:00.000Z')], { expectedLastSeq: 0, msgId: 'stuck' });
    // A consumer that never delivers the subject's events (as one JetStream keeps re-creating does).
    const real = env.nats;
    const consumers = { get: (stream: string, opts: object) => real.js.consumers.get(stream, { ...opts, filter_subjects: env.topology.task('t-empty') }) };
    const stuck = { ...real, js: new Proxy(real.js, { get: (o, k) => (k === 'consumers' ? consumers : Reflect.get(o, k)) }) } as Nats;
    await expect(new EventStore(stuck, { readTimeoutMs: 1_000 }).read(env.topology.streams.TASKS, subject, decodeTaskEvent)).rejects.toBeInstanceOf(Unavailable);
  });

  it('refuses an append made on a stale sequence with Conflict', async () => {
    const subject = env.topology.task('t2');
    await store.append(subject, [backgrounded('t2', '2026-01-01T00:00:00.000Z')], { expectedLastSeq: 0, msgId: 'x1' });
    await expect(store.append(subject, [backgrounded('t2', '2026-01-01T00:00:00.000Z')], { expectedLastSeq: 0, msgId: 'x2' })).rejects.toBeInstanceOf(Conflict);
  });

  it('treats a retried publish with the same msg id as a no-op', async () => {
    const subject = env.topology.conv('c9');
    const ev = { type: 'wait.invalidated' as const, data: { reason: 'r' }, metadata: { at: '2026-01-01T00:00:00.000Z' } };
    const a = await store.publish(subject, ev, 'same');
    const b = await store.publish(subject, ev, 'same');
    expect(b).toEqual({ seq: a.seq, duplicate: true });
  });
});
