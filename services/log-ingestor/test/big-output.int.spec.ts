import { waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { GeneratedOutput } from './generated-output';
import { ingestorEnv, quietLogger, uid } from './harness';
import { logsLayout, storedLayout } from './layout';
import { RunnerDouble } from './runner-double';

const MiB = 1024 * 1024;
/** Size of the big output (the 1 GB figure is in bench/ingest/throughput.bench.ts). */
const BIG = Number(process.env.INGEST_BIG_MB ?? 200) * MiB;

/**
 * Point 5 (big and hostile output): a 200 MB single line of random bytes (NULs, invalid UTF-8, no
 * newline at all), sent by the runner in 3 MiB records, three times the NATS payload limit. Memory
 * stays bounded by construction: the ingestor's high-water mark of buffered bytes is checked against
 * its configured bounds, which do not grow with the output.
 */
describe('log-ingestor with big and hostile output', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor;
  const settings = { queueHighWaterBytes: MiB, flushBytes: MiB }; // the defaults
  const recordBytes = 3 * MiB;

  beforeAll(async () => {
    h = await ingestorEnv('big');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-big', { chunkBytes: recordBytes });
    runner.keepAlive(500);
    ingestor = await startIngestor(h.config(), { logger: quietLogger(), instanceId: 'big-a', ...settings });
  });
  afterAll(async () => {
    await ingestor?.stop();
    await runner?.stop();
    await h?.close();
  });

  it(`stores a ${BIG / MiB} MB line with no newline byte-exact, in chunks below the NATS payload limit, with bounded buffering`, async () => {
    const commandId = uid('c');
    const gen = new GeneratedOutput(commandId, BIG + 7, { noNewline: true, regionBytes: 8 * MiB });
    const sample = gen.bytes(0, MiB);
    expect(sample.includes(0x0a)).toBe(false);
    expect(sample.includes(0x00)).toBe(true);
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(sample)).toThrow();

    runner.command(commandId).generate(gen);
    runner.command(commandId).exit({ exitCode: 0 });
    await h.startTask({ taskId: uid('t'), commandId, conversationId: uid('v'), runnerId: 'runner-big', windowMs: 0 });
    await waitFor(async () => (await h.cursor(commandId))?.result_state === 'readable', 170_000, 'readable', 250);

    const digest = gen.digest();
    const stored = await storedLayout(h.pool, commandId);
    expect(stored.runs).toEqual([{ from: 0, to: gen.total, sha: digest }]);
    expect(stored.duplicatedBytes).toBe(0);
    expect(stored.streams).toEqual(new Set([1, 2]));
    const logs = await logsLayout(h.env.nats, h.t, commandId, h.env.nats.nc.info!.max_payload);
    expect(logs.runs).toEqual([{ from: 0, to: gen.total, sha: digest }]);
    expect(logs.oversized).toBe(0);
    expect(logs.maxPiece).toBeLessThanOrEqual(64 * 1024);

    const stats = ingestor.stats();
    console.log(`big output: ${gen.total} bytes in ${stored.pieces} rows; largest record ${stats.maxRecordBytes}, largest row ${stats.maxRowBytes}, most bytes buffered for a command ${stats.maxBufferedBytes}`);
    expect(stats.maxRecordBytes).toBe(recordBytes); // the runner really sent records bigger than a NATS message
    expect(stats.maxRowBytes).toBe(64 * 1024);
    // The queue (its high water + the record that crossed it), the batch being filled and the batch
    // being committed (each at most its flush size + the record that filled it): nothing grows with the output.
    expect(stats.maxBufferedBytes).toBeLessThanOrEqual(settings.queueHighWaterBytes + 2 * settings.flushBytes + 3 * recordBytes);
  }, 600_000); // 200 MB through both stores: minutes on a loaded 2-core machine
});
