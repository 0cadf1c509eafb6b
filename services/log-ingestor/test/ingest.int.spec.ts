import { FixedClock } from '@handplane/kernel';
import { waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { tilingProblems } from '../src/app/log-tiling';
import { dribble, hostileBytes, ingestorEnv, quietLogger, sha256, uid } from './harness';
import { RunnerDouble } from './runner-double';

describe('log-ingestor (real NATS + Postgres, runner double)', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor;
  const ackViolations: string[] = [];

  beforeAll(async () => {
    h = await ingestorEnv('ingest');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-a', {
      chunkBytes: 48 * 1024,
      // At the moment of every Ack the acknowledged bytes must already be rows and the cursor past them.
      onAck: async (commandId, offset) => {
        const stored = (await h.rows(commandId)).reduce((n, r) => n + r.data.length, 0);
        const cur = await h.cursor(commandId);
        if (stored < offset || !cur || cur.committed_offset < offset) ackViolations.push(`${commandId}: ack ${offset} with ${stored} bytes stored, cursor ${cur?.committed_offset}`);
      },
    });
    ingestor = await startIngestor(h.config(), { logger: quietLogger(), instanceId: 'ingest-a' });
  });

  afterAll(async () => {
    await ingestor?.stop();
    await runner?.stop();
    await h?.close();
  });

  it('stores 600 KB of hostile bytes byte-exact, in rows that tile the output, and settles once', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const source = hostileBytes(600_000);
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-a' });
    await dribble((d, s) => cmd.write(d, s), source, { delayMs: 3 });
    cmd.exit({ exitCode: 3 });

    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 30_000, 'readable');
    const rows = await h.rows(ids.commandId);
    expect(tilingProblems(rows.map((r) => ({ offset: r.offset, length: r.data.length })), source.length)).toEqual([]);
    expect(sha256(Buffer.concat(rows.map((r) => r.data)))).toBe(sha256(source));
    expect(rows.some((r) => r.stream === 2)).toBe(true);
    expect(await h.cursor(ids.commandId)).toMatchObject({ committed_offset: 600_000, end_offset: 600_000, exit_code: 3, signal: null, owner: null });

    const events = await h.cmdEvents(ids.commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    expect(events[0]!.data).toMatchObject({ commandId: ids.commandId, taskId: ids.taskId, attempt: 1, runnerId: 'runner-a', exitCode: 3, endOffset: 600_000 });
    expect(events[1]!.data).toEqual({ commandId: ids.commandId, taskId: ids.taskId, attempt: 1, outputBytes: 600_000 });

    expect(ackViolations).toEqual([]);
    const acked = runner.acks.filter((a) => a.commandId === ids.commandId).map((a) => a.offset);
    expect(Math.max(...acked)).toBe(600_000);

    // LOGS mirrors the rows (same offsets and sizes) and ends with the exit record.
    const logs = await h.logsMessages(ids.commandId);
    const chunks = logs.filter((m) => !m.exit);
    expect(chunks.map((m) => [m.offset, m.bytes])).toEqual(rows.map((r) => [r.offset, r.data.length]));
    expect(chunks.every((m) => m.msgId === `${ids.commandId}:${m.offset}` && (m.stream === 'stdout' || m.stream === 'stderr'))).toBe(true);
    const exit = logs.filter((m) => m.exit);
    expect(exit).toHaveLength(1);
    expect(JSON.parse(exit[0]!.exit!)).toMatchObject({ exitCode: 3, signal: null, endOffset: 600_000 });
    expect(exit[0]!.msgId).toBe(`${ids.commandId}:exit`);
  });

  it('keeps the Command Log an exact prefix at every moment while the command runs (what the output endpoint serves)', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const source = hostileBytes(400_000);
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-a' });
    const writing = dribble((d, s) => cmd.write(d, s), source, { maxPiece: 8_000, delayMs: 4 });
    const seen: number[] = [];
    const problems: string[] = [];
    // Each sample reads the cursor and the rows in one snapshot, as a reader of the output would see them.
    const sample = async () => {
      const c = await h.pool.connect();
      try {
        await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
        const cur = await c.query<{ committed_offset: string }>('SELECT committed_offset FROM ingest_cursors WHERE command_id = $1', [ids.commandId]);
        const rows = await c.query<{ offset: string; data: Buffer }>('SELECT "offset", data FROM command_log WHERE command_id = $1 ORDER BY "offset"', [ids.commandId]);
        await c.query('COMMIT');
        const committed = Number(cur.rows[0]?.committed_offset ?? 0);
        const tiles = rows.rows.map((r) => ({ offset: Number(r.offset), length: r.data.length }));
        problems.push(...tilingProblems(tiles, committed).map((p) => `at ${committed}: ${p}`));
        if (!Buffer.concat(rows.rows.map((r) => r.data)).equals(source.subarray(0, committed))) problems.push(`bytes differ from the source below ${committed}`);
        seen.push(committed);
      } finally {
        c.release();
      }
    };
    let done = false;
    void writing.then(() => (done = true));
    while (!done) {
      await sample();
      await new Promise((r) => setTimeout(r, 15));
    }
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 30_000, 'readable');
    await sample();
    expect(problems).toEqual([]);
    expect(new Set(seen.filter((n) => n > 0 && n < source.length)).size).toBeGreaterThanOrEqual(3); // really sampled mid-run
    expect(seen[seen.length - 1]).toBe(source.length);
  });

  it('settles an empty output and an exit without exit code (killed by a signal)', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    runner.command(ids.commandId).exit({ signal: 'SIGKILL', reason: 'stopped' });
    await h.startTask({ ...ids, runnerId: 'runner-a' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');
    expect(await h.rows(ids.commandId)).toEqual([]);
    const events = await h.cmdEvents(ids.commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    expect(events[0]!.data).toMatchObject({ exitCode: null, signal: 'SIGKILL', reason: 'stopped', endOffset: 0 });
    expect(await h.cursor(ids.commandId)).toMatchObject({ exit_code: null, signal: 'SIGKILL', end_offset: 0 });
  });

  it('ignores a redelivered TaskStarted and other task events', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    runner.command(ids.commandId).write(Buffer.from('once\n'));
    runner.command(ids.commandId).exit({ exitCode: 0 });
    await h.startTask({ ...ids, runnerId: 'runner-a' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');
    // The same TaskStarted again (as a redelivery would hand it over), then an event the ingestor does not follow.
    const subject = h.t.task(ids.taskId);
    const { lastSeq } = await h.store.read(h.t.streams.TASKS, subject, (d) => d);
    const at = new Date().toISOString();
    const again = await h.store.append(subject, [{ type: 'TaskStarted', data: { taskId: ids.taskId, commandId: ids.commandId, attempt: 1, runnerId: 'runner-a', startedAt: at }, metadata: { at } }], { expectedLastSeq: lastSeq, msgId: uid('again') });
    await h.store.append(subject, [{ type: 'TaskBackgrounded', data: { taskId: ids.taskId, commandId: ids.commandId, attempt: 1, backgroundedAt: at }, metadata: { at } }], { expectedLastSeq: again, msgId: uid('bg') });
    const durable = h.t.durable('ingestor-tasks');
    await waitFor(async () => (await h.env.nats.jsm.consumers.info(h.t.streams.TASKS, durable)).ack_floor.stream_seq >= again + 1, 10_000, 'feed consumed');
    await new Promise((r) => setTimeout(r, 500)); // a few claim rounds
    expect(await h.cursor(ids.commandId)).toMatchObject({ result_state: 'readable', committed_offset: 5 });
    const count = await h.pool.query('SELECT count(*)::int AS n FROM ingest_cursors WHERE task_id = $1', [ids.taskId]);
    expect(count.rows[0].n).toBe(1);
    expect(runner.readLogCalls.get(ids.commandId)).toHaveLength(1);
  });

  it('answers /healthz and /readyz', async () => {
    const base = `http://127.0.0.1:${ingestor.httpPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { checks: { name: string }[] }).checks.map((c) => c.name).sort()).toEqual(['nats', 'postgres']);
  });
});

describe('live view (command.output in CONV while in the foreground window)', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor;
  const clock = new FixedClock(new Date());

  beforeAll(async () => {
    h = await ingestorEnv('live');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-l');
    ingestor = await startIngestor(h.config(), { logger: quietLogger(), clock, instanceId: 'live-a' });
  });
  afterAll(async () => {
    await ingestor?.stop();
    await runner?.stop();
    await h?.close();
  });

  it('publishes output inside the window, in events of at most 32 KiB of text, and nothing after it', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-l', windowMs: 60_000, startedAt: clock.now() });
    const text = `${'héllo wörld € 🚀 '.repeat(6000)}\n`;
    const early = Buffer.concat([Buffer.from(text, 'utf8'), Buffer.from([0xff, 0x00, 0x41])]);
    await dribble((d, s) => cmd.write(d, s), early, { maxPiece: 30_000, delayMs: 2 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.committed_offset === early.length, 15_000, 'early bytes committed');
    await waitFor(async () => (await h.outputEvents(ids.conversationId)).reduce((n, e) => n + e.bytes, 0) === early.length, 15_000, 'live output');

    clock.advance(61_000);
    cmd.write(Buffer.from('after the window\n'));
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');

    const out = await h.outputEvents(ids.conversationId);
    expect(out.every((e) => new TextEncoder().encode(e.text).length <= 32 * 1024)).toBe(true);
    expect(out.length).toBeGreaterThan(1);
    expect(out.every((e) => e.taskId === ids.taskId && e.commandId === ids.commandId)).toBe(true);
    // Contiguous slices covering exactly the bytes committed inside the window.
    expect(out.map((e) => e.offset)).toEqual(out.map((_, i) => out.slice(0, i).reduce((n, e) => n + e.bytes, 0)));
    expect(out.reduce((n, e) => n + e.bytes, 0)).toBe(early.length);
    expect(out.map((e) => e.text).join('')).toBe(`${text}\ufffd\u0000A`);
    // The display text replaced 0xFF; the Command Log keeps it.
    const stored = Buffer.concat((await h.rows(ids.commandId)).map((r) => r.data));
    expect(stored.equals(Buffer.concat([early, Buffer.from('after the window\n')]))).toBe(true);
  });
});
