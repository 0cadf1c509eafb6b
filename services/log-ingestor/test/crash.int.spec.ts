import { NATS_URL, waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { tilingProblems } from '../src/app/log-tiling';
import { spawnIngestor, type IngestorChild } from './child';
import { dribble, hostileBytes, ingestorEnv, quietLogger, sha256, uid } from './harness';
import { RunnerDouble } from './runner-double';

describe('log-ingestor crash safety', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  const started: RunningIngestor[] = [];
  let child: IngestorChild | undefined;

  beforeAll(async () => {
    h = await ingestorEnv('crash');
    // Every read that starts above 0 first re-sends 10 000 bytes below its offset, cut at odd places.
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-c', { chunkBytes: 16 * 1024 + 7, replayOverlap: 10_000 });
  });
  afterAll(async () => {
    await child?.kill();
    for (const i of started) await i.stop();
    await runner?.stop();
    await h?.close();
  });

  async function inProcess(over: Parameters<typeof startIngestor>[1] = {}): Promise<RunningIngestor> {
    const i = await startIngestor(h.config(), { logger: quietLogger(), ...over });
    started.push(i);
    return i;
  }

  it('a SIGKILLed ingestor leaves a consistent prefix, and a new instance finishes byte-exact with one result', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const source = hostileBytes(800_000);
    const cmd = runner.command(ids.commandId);
    child = await spawnIngestor({ NATS_URL, NATS_PREFIX: h.env.prefix, DATABASE_URL: h.db.url, INGESTOR_PORT: '0', TEST_LEASE_MS: '2000', TEST_INSTANCE_ID: 'doomed' });
    await h.startTask({ ...ids, runnerId: 'runner-c' });
    const writing = dribble((d, s) => cmd.write(d, s), source, { maxPiece: 9_000, delayMs: 4 });

    await waitFor(() => runner.acks.some((a) => a.commandId === ids.commandId && a.offset >= 150_000), 30_000, 'the child to commit some output');
    await child.kill();

    // Whatever moment the kill hit, the rows end exactly at the committed cursor.
    const atCrash = (await h.cursor(ids.commandId))!;
    expect(atCrash).toMatchObject({ result_state: 'result_pending', owner: 'doomed' });
    const crashRows = await h.rows(ids.commandId);
    expect(tilingProblems(crashRows.map((r) => ({ offset: r.offset, length: r.data.length })), atCrash.committed_offset)).toEqual([]);
    expect(atCrash.committed_offset).toBeLessThan(source.length);

    const survivor = await inProcess({ instanceId: 'survivor', leaseMs: 2000 });
    await writing;
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 60_000, 'readable');

    const rows = await h.rows(ids.commandId);
    expect(tilingProblems(rows.map((r) => ({ offset: r.offset, length: r.data.length })), source.length)).toEqual([]);
    expect(sha256(Buffer.concat(rows.map((r) => r.data)))).toBe(sha256(source));
    const calls = runner.readLogCalls.get(ids.commandId)!;
    expect(calls.length).toBeGreaterThanOrEqual(2);
    const resumed = calls[calls.length - 1]!;
    expect(resumed.fromOffset).toBeGreaterThanOrEqual(atCrash.committed_offset);
    expect(resumed.sentFrom).toBeLessThan(resumed.fromOffset); // the double re-sent bytes already stored
    expect(runner.maxConcurrentReads.get(ids.commandId)).toBe(1);
    expect((await h.cmdEvents(ids.commandId)).map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    await survivor.stop();
  });

  it('a crash between CommandExited and CommandResultReadable replays without a second event', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    let crashes = 0;
    const i = await inProcess({
      instanceId: 'faulty',
      faults: {
        afterExitRecorded: (commandId) => {
          if (commandId === ids.commandId && crashes++ === 0) throw new Error('simulated crash after CommandExited');
        },
      },
    });
    const cmd = runner.command(ids.commandId);
    cmd.write(hostileBytes(70_000));
    cmd.exit({ exitCode: 1 });
    await h.startTask({ ...ids, runnerId: 'runner-c' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 30_000, 'readable');
    expect(crashes).toBe(2);
    expect((await h.cmdEvents(ids.commandId)).map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    expect((await h.logsMessages(ids.commandId)).filter((m) => m.exit)).toHaveLength(1);
    expect(await h.cursor(ids.commandId)).toMatchObject({ end_offset: 70_000, exit_code: 1 });
    await i.stop();
  });

  it('two instances on one database never read one command at the same time', async () => {
    const a = await inProcess({ instanceId: 'twin-a', maxActive: 2, leaseMs: 1500, claimIntervalMs: 50 });
    const b = await inProcess({ instanceId: 'twin-b', maxActive: 2, leaseMs: 1500, claimIntervalMs: 50 });
    const jobs = Array.from({ length: 8 }, () => ({ taskId: uid('t'), commandId: uid('c'), conversationId: uid('v'), source: hostileBytes(120_000) }));
    // Which instance reads what, sampled while they work (both share one gRPC connection, so the
    // double cannot tell them apart).
    const readBy = { a: new Set<string>(), b: new Set<string>() };
    const bothAtOnce: string[] = [];
    const sampler = setInterval(() => {
      const [ia, ib] = [a.activeCommands(), b.activeCommands()];
      ia.forEach((c) => readBy.a.add(c));
      ib.forEach((c) => readBy.b.add(c));
      bothAtOnce.push(...ia.filter((c) => ib.includes(c)));
    }, 10);
    for (const j of jobs) await h.startTask({ ...j, runnerId: 'runner-c' });
    await Promise.all(
      jobs.map(async (j) => {
        const cmd = runner.command(j.commandId);
        await dribble((d, s) => cmd.write(d, s), j.source, { maxPiece: 6_000, delayMs: 10 });
        cmd.exit({ exitCode: 0 });
      }),
    );
    await waitFor(async () => (await Promise.all(jobs.map((j) => h.cursor(j.commandId)))).every((c) => c?.result_state === 'readable'), 60_000, 'all readable');
    clearInterval(sampler);

    expect(bothAtOnce).toEqual([]);
    for (const j of jobs) {
      expect(runner.maxConcurrentReads.get(j.commandId)).toBe(1);
      const rows = await h.rows(j.commandId);
      expect(tilingProblems(rows.map((r) => ({ offset: r.offset, length: r.data.length })), j.source.length)).toEqual([]);
      expect(sha256(Buffer.concat(rows.map((r) => r.data)))).toBe(sha256(j.source));
      expect((await h.cmdEvents(j.commandId)).map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    }
    // Both instances did part of the work (each reads at most two commands at a time).
    expect(readBy.a.size).toBeGreaterThan(0);
    expect(readBy.b.size).toBeGreaterThan(0);
    await Promise.all([a.stop(), b.stop()]);
  });
});
