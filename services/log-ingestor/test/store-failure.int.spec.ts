import { DiscardPolicy } from '@nats-io/jetstream';
import { waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { dribble, hostileBytes, ingestorEnv, quietLogger, sha256, uid } from './harness';
import { logsLayout, storedLayout } from './layout';
import { RunnerDouble } from './runner-double';

/**
 * Point 1 of the issue: a batch is durable in LOGS and `command_log` or in neither, the cursor moves
 * with the rows, and a store that fails for a while leaves the result `result_pending` and the
 * command released with a back-off, until the store answers again.
 */
describe('log-ingestor when a store fails for a while', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor;

  beforeAll(async () => {
    h = await ingestorEnv('storefail');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-f', { chunkBytes: 20_000 });
    runner.keepAlive(200);
    ingestor = await startIngestor(h.config(), { logger: quietLogger(), instanceId: 'sf-a', leaseMs: 3000, claimIntervalMs: 50 });
  });
  afterAll(async () => {
    await ingestor?.stop();
    await runner?.stop();
    await h?.close();
  });

  /** Released after a failure: no owner, the error recorded, not claimable again before the back-off ends. */
  async function backingOff(commandId: string, error: RegExp) {
    const r = await h.pool.query<{ owner: string | null; last_error: string | null; later: boolean }>('SELECT owner, last_error, lease_until > now() AS later FROM ingest_cursors WHERE command_id = $1', [commandId]);
    const c = r.rows[0];
    return !!c && c.owner === null && error.test(c.last_error ?? '') && c.later;
  }

  async function expectNothingSettled(commandId: string) {
    expect(await h.cursor(commandId)).toMatchObject({ result_state: 'result_pending', committed_offset: 0 });
    expect(await h.rows(commandId)).toEqual([]);
    expect(await h.cmdEvents(commandId)).toEqual([]);
  }

  async function expectExactlyOnce(commandId: string, source: Buffer) {
    const stored = await storedLayout(h.pool, commandId);
    expect(stored.runs).toEqual([{ from: 0, to: source.length, sha: sha256(source) }]);
    expect(stored.duplicatedBytes).toBe(0);
    // LOGS holds the same rows, each once: no byte lost or repeated there either.
    const logs = await logsLayout(h.env.nats, h.t, commandId);
    expect(logs.runs).toEqual(stored.runs);
    expect(logs.duplicatedBytes).toBe(0);
    expect(logs.pieces).toBe(stored.pieces);
    expect(logs.exits).toHaveLength(1);
    expect((await h.cmdEvents(commandId)).map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
  }

  it('Postgres refusing the commit after LOGS accepted the chunks: nothing settles, then the published chunks are adopted as they are', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    // A deferred constraint trigger fails the COMMIT of any transaction that inserted rows of this
    // command: by then the batch's chunks are already in LOGS (publish before commit).
    await h.pool.query(`CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated outage: commit refused'; END $$`);
    await h.pool.query(
      `CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON command_log DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
       WHEN (NEW.command_id = '${ids.commandId}') EXECUTE FUNCTION refuse_commit()`,
    );
    const source = hostileBytes(400_000);
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-f' });
    // The first batch is cut by the flush timer while stdout trickles in; every later read finds all
    // of it and would cut its rows elsewhere (one stream: rows grow to 64 KiB).
    await dribble((d) => cmd.write(d, 1), source.subarray(0, 30_000), { maxPiece: 3_000, delayMs: 5 });
    await waitFor(() => backingOff(ids.commandId, /commit refused/), 15_000, 'a refused commit and a back-off');
    const orphaned = await logsLayout(h.env.nats, h.t, ids.commandId);
    expect(orphaned.pieces).toBeGreaterThan(0); // the window between publish and commit was really hit
    cmd.write(source.subarray(30_000), 1);
    cmd.exit({ exitCode: 0 });
    await waitFor(async () => (runner.readLogCalls.get(ids.commandId)?.length ?? 0) >= 1, 10_000, 'a read');
    await waitFor(() => backingOff(ids.commandId, /commit refused/), 15_000, 'another refusal after the exit');
    await expectNothingSettled(ids.commandId);

    await h.pool.query('DROP TRIGGER refuse ON command_log');
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 30_000, 'readable after the outage');
    await expectExactlyOnce(ids.commandId, source);
    // The first chunks in LOGS are exactly the ones the refused batch published.
    const logs = await logsLayout(h.env.nats, h.t, ids.commandId);
    expect(logs.runs[0]!.from).toBe(0);
    expect(ingestor.stats().rowsAdopted).toBeGreaterThanOrEqual(orphaned.pieces);
  });

  it('NATS refusing LOGS publishes: the transaction rolls back, nothing settles, and the output is complete once NATS accepts again', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const logsName = h.t.streams.LOGS;
    const info = await h.env.nats.jsm.streams.info(logsName);
    // LOGS full with "discard new": JetStream rejects every publish (a real store failure, not a mock).
    await h.env.nats.jsm.streams.update(logsName, { ...info.config, discard: DiscardPolicy.New, max_msgs: info.state.messages });
    const source = hostileBytes(300_000);
    const cmd = runner.command(ids.commandId);
    await h.startTask({ ...ids, runnerId: 'runner-f' });
    await dribble((d, s) => cmd.write(d, s), source, { maxPiece: 20_000, delayMs: 2 });
    cmd.exit({ exitCode: 7 });
    await waitFor(() => backingOff(ids.commandId, /maximum messages exceeded/), 15_000, 'a rejected publish and a back-off');
    await expectNothingSettled(ids.commandId);
    expect((await logsLayout(h.env.nats, h.t, ids.commandId)).pieces).toBe(0);

    await h.env.nats.jsm.streams.update(logsName, { ...info.config, discard: DiscardPolicy.Old, max_msgs: -1 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 30_000, 'readable after the outage');
    await expectExactlyOnce(ids.commandId, source);
    expect(await h.cursor(ids.commandId)).toMatchObject({ exit_code: 7, end_offset: source.length, last_error: null });
    expect(runner.readLogCalls.get(ids.commandId)!.length).toBeGreaterThanOrEqual(2);
  });
});
