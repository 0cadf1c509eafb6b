import { NATS_URL, waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { spawnIngestor, type IngestorChild } from './child';
import { GeneratedOutput } from './generated-output';
import { ingestorEnv, quietLogger, uid } from './harness';
import { logsLayout, storedLayout } from './layout';
import { RunnerDouble } from './runner-double';

const MiB = 1024 * 1024;
const CAP = 8 * MiB;
const HEAD = CAP / 2;
const TAIL = CAP - HEAD;

/**
 * Point 5 (the cap): OUTPUT_CAP_BYTES keeps the first half and the last half at their real offsets,
 * records the dropped range explicitly (cursor, LOGS marker, readable event), keeps reading and
 * acknowledging meanwhile, and never holds the tail in memory (the runner's spool keeps it).
 */
describe('log-ingestor output cap', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor | undefined;
  let child: IngestorChild | undefined;
  const doubles: RunnerDouble[] = [];

  beforeAll(async () => {
    h = await ingestorEnv('cap');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-cap', { chunkBytes: 48 * 1024 });
    runner.keepAlive(200);
  });
  afterAll(async () => {
    await child?.kill();
    await ingestor?.stop();
    for (const d of [runner, ...doubles]) await d?.stop();
    await h?.close();
  });

  const startInProcess = (instanceId: string) =>
    startIngestor(h.config({ RUNNER_LOST_AFTER_MS: '1500' }), { logger: quietLogger(), instanceId, outputCapBytes: CAP, queueHighWaterBytes: 256 * 1024, flushBytes: 256 * 1024, leaseMs: 2000, claimIntervalMs: 50 });

  /** A command printing `gen` over time, `step` bytes every 10 ms, then exiting. */
  async function produce(d: RunnerDouble, commandId: string, gen: GeneratedOutput, step = MiB): Promise<void> {
    const cmd = d.command(commandId);
    cmd.generate(gen, 0);
    while (cmd.length < gen.total) {
      cmd.grow(step);
      await new Promise((r) => setTimeout(r, 10));
    }
    cmd.exit({ exitCode: 0 });
  }

  async function expectHeadAndTail(commandId: string, gen: GeneratedOutput) {
    const E = gen.total;
    const truncation = { droppedFrom: HEAD, droppedTo: E - TAIL, droppedBytes: E - TAIL - HEAD };
    expect(await h.cursor(commandId)).toMatchObject({ result_state: 'readable', committed_offset: E, end_offset: E, dropped_from: HEAD, dropped_to: E - TAIL, drop_final: true });
    const expected = [
      { from: 0, to: HEAD, sha: gen.digest(0, HEAD) },
      { from: E - TAIL, to: E, sha: gen.digest(E - TAIL, E) },
    ];
    const stored = await storedLayout(h.pool, commandId);
    expect(stored.runs).toEqual(expected);
    expect(stored.duplicatedBytes).toBe(0);
    const logs = await logsLayout(h.env.nats, h.t, commandId);
    expect(logs.runs).toEqual(expected);
    expect(logs.duplicatedBytes).toBe(0);
    expect(logs.truncations).toEqual([{ msgId: `${commandId}:truncated`, offset: HEAD, record: truncation }]);
    expect(logs.exits).toHaveLength(1);
    const events = await h.cmdEvents(commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    expect(events[0]!.data).toMatchObject({ endOffset: E });
    expect(events[1]!.data).toMatchObject({ outputBytes: E, truncation });
  }

  it('keeps the head and the tail of a 40 MB output, marks the gap, and acknowledges the runner through the dropped range', async () => {
    ingestor = await startInProcess('cap-a');
    const commandId = uid('c');
    const gen = new GeneratedOutput(commandId, 40 * MiB + 12_345);
    await h.startTask({ taskId: uid('t'), commandId, conversationId: uid('v'), runnerId: 'runner-cap' });
    await produce(runner, commandId, gen);
    await waitFor(async () => (await h.cursor(commandId))?.result_state === 'readable', 60_000, 'readable');
    await expectHeadAndTail(commandId, gen);
    const acks = runner.acks.filter((a) => a.commandId === commandId).map((a) => a.offset);
    // While dropping, the runner heard about progress (it may free its spool) but never past what is settled.
    expect(acks.some((o) => o > HEAD && o <= gen.total - TAIL)).toBe(true);
    expect(Math.max(...acks)).toBe(gen.total);
    // The 4 MiB tail never sat in the ingestor's memory (its bound: queue 256 KiB + batch 256 KiB + a
    // 48 KiB record each): it waited, unacknowledged, in the runner's spool.
    expect(ingestor.stats().maxBufferedBytes).toBeLessThan(MiB);
  });

  it('stores everything, with no marker, when the output passes the head but not the cap', async () => {
    const commandId = uid('c');
    const gen = new GeneratedOutput(commandId, 6 * MiB);
    await h.startTask({ taskId: uid('t'), commandId, conversationId: uid('v'), runnerId: 'runner-cap' });
    await produce(runner, commandId, gen);
    await waitFor(async () => (await h.cursor(commandId))?.result_state === 'readable', 60_000, 'readable');
    expect((await storedLayout(h.pool, commandId)).runs).toEqual([{ from: 0, to: gen.total, sha: gen.digest() }]);
    const logs = await logsLayout(h.env.nats, h.t, commandId);
    expect(logs.runs).toEqual([{ from: 0, to: gen.total, sha: gen.digest() }]);
    expect(logs.truncations).toEqual([]);
    const events = await h.cmdEvents(commandId);
    expect(events[1]!.data).toEqual({ commandId, taskId: expect.any(String), attempt: 1, outputBytes: gen.total });
  });

  it('settles a runner lost while dropping as unavailable, naming the dropped range next to the durable head', async () => {
    const d = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-cap-dies', { chunkBytes: 48 * 1024 });
    doubles.push(d);
    d.keepAlive(200);
    const commandId = uid('c');
    const gen = new GeneratedOutput(commandId, 30 * MiB);
    d.command(commandId).generate(gen, 20 * MiB);
    await h.startTask({ taskId: uid('t'), commandId, conversationId: uid('v'), runnerId: 'runner-cap-dies' });
    await waitFor(async () => (await h.cursor(commandId))?.committed_offset === 20 * MiB - TAIL, 30_000, 'the drop to reach the read position minus the tail');
    d.kill();
    await waitFor(async () => (await h.cursor(commandId))?.result_state === 'unavailable', 30_000, 'unavailable');
    const events = await h.cmdEvents(commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandResultUnavailable']);
    expect(events[0]!.data).toMatchObject({ durableBytes: 20 * MiB - TAIL, truncation: { droppedFrom: HEAD, droppedTo: 20 * MiB - TAIL, droppedBytes: 20 * MiB - TAIL - HEAD } });
    expect((await storedLayout(h.pool, commandId)).runs).toEqual([{ from: 0, to: HEAD, sha: gen.digest(0, HEAD) }]);
    await ingestor!.stop();
    ingestor = undefined;
  });

  it('a SIGKILL while dropping resumes from the committed cursor: the same head, gap and tail, one marker, one result', async () => {
    const commandId = uid('c');
    const gen = new GeneratedOutput(commandId, 40 * MiB);
    child = await spawnIngestor({ NATS_URL, NATS_PREFIX: h.env.prefix, DATABASE_URL: h.db.url, INGESTOR_PORT: '0', OUTPUT_CAP_BYTES: String(CAP), TEST_LEASE_MS: '1500', TEST_INSTANCE_ID: 'cap-doomed' });
    const cmd = runner.command(commandId);
    cmd.generate(gen, 0);
    await h.startTask({ taskId: uid('t'), commandId, conversationId: uid('v'), runnerId: 'runner-cap' });
    const dropping = async () => {
      const c = await h.cursor(commandId);
      return !!c && c.dropped_from === HEAD && !c.drop_final && c.committed_offset > HEAD;
    };
    while (!(await dropping())) {
      if (cmd.length < 20 * MiB) cmd.grow(MiB / 4);
      await new Promise((r) => setTimeout(r, 20));
    }
    await child.kill();
    const atCrash = (await h.cursor(commandId))!;
    expect((await storedLayout(h.pool, commandId)).runs).toEqual([{ from: 0, to: HEAD, sha: gen.digest(0, HEAD) }]);
    expect(Math.max(...runner.acks.filter((a) => a.commandId === commandId).map((a) => a.offset))).toBeLessThanOrEqual(atCrash.committed_offset);

    ingestor = await startInProcess('cap-survivor');
    while (cmd.length < gen.total) {
      cmd.grow(MiB);
      await new Promise((r) => setTimeout(r, 10));
    }
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(commandId))?.result_state === 'readable', 60_000, 'readable after the crash');
    await expectHeadAndTail(commandId, gen);
    const resumed = runner.readLogCalls.get(commandId)!;
    expect(resumed.length).toBeGreaterThanOrEqual(3); // the child, the survivor, the survivor's read of the tail
    expect(resumed[1]!.fromOffset).toBe(atCrash.committed_offset);
  });
});
