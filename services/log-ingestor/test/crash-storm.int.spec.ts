import { NATS_URL, waitFor } from '@handplane/testing';
import { tilingProblems } from '../src/app/log-tiling';
import { spawnIngestor, type IngestorChild } from './child';
import { GeneratedOutput, seededRandom } from './generated-output';
import { ingestorEnv, sha256, uid } from './harness';
import { logsLayout, storedLayout } from './layout';
import { RunnerDouble, type ScriptedCommand } from './runner-double';

const MiB = 1024 * 1024;
/** 20 × 2 MB here; `INGEST_CRASH_MB=10` runs the full 20 × 10 MB of the issue (about three times longer). */
const COMMANDS = 20;
const BYTES = Number(process.env.INGEST_CRASH_MB ?? 2) * MiB;
const KILLS = 20;
const SEED = Number(process.env.INGEST_CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

interface Job {
  readonly ids: { taskId: string; commandId: string; conversationId: string };
  readonly gen: GeneratedOutput;
  readonly cmd: ScriptedCommand;
}

/**
 * Point 2: two ingestor processes share 20 commands while their output is being written; one of them
 * is SIGKILLed at 20 seeded random moments and started again. After every kill the Command Log is an
 * exact prefix of each command's output; at the end every byte is there once, in `command_log` and
 * in LOGS (compared with the runner's own SHA-256), and each command has one exit and one result.
 */
describe('log-ingestor crash storm', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  const children = new Set<IngestorChild>();

  beforeAll(async () => {
    h = await ingestorEnv('storm');
    // Every resumed read first re-sends up to 10 000 bytes already stored, as a runner replaying its last chunk.
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-storm', { chunkBytes: 32 * 1024 + 7, replayOverlap: 10_000 });
    runner.keepAlive(300);
  });
  afterAll(async () => {
    for (const c of children) await c.kill();
    await runner?.stop();
    await h?.close();
  });

  let started = 0;
  async function startChild(): Promise<IngestorChild> {
    const c = await spawnIngestor({
      NATS_URL,
      NATS_PREFIX: h.env.prefix,
      DATABASE_URL: h.db.url,
      INGESTOR_PORT: '0',
      TEST_LEASE_MS: '1500',
      TEST_CLAIM_INTERVAL_MS: '100',
      TEST_INSTANCE_ID: `storm-${started++}`,
    });
    children.add(c);
    return c;
  }

  /**
   * In one snapshot: the rows of a command tile `[0, committed)` and equal the runner's bytes there
   * (Postgres hashes them, so a check after every kill costs no transfer).
   */
  async function prefixProblems(job: Job): Promise<string[]> {
    const c = await h.pool.connect();
    try {
      await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const cur = await c.query<{ committed_offset: string }>('SELECT committed_offset FROM ingest_cursors WHERE command_id = $1', [job.ids.commandId]);
      const rows = await c.query<{ offset: string; length: number }>('SELECT "offset", octet_length(data) AS length FROM command_log WHERE command_id = $1 ORDER BY "offset"', [job.ids.commandId]);
      const hash = await c.query<{ sha: string | null }>(`SELECT encode(sha256(string_agg(data, ''::bytea ORDER BY "offset")), 'hex') AS sha FROM command_log WHERE command_id = $1`, [job.ids.commandId]);
      await c.query('COMMIT');
      const committed = Number(cur.rows[0]?.committed_offset ?? 0);
      const problems = tilingProblems(rows.rows.map((r) => ({ offset: Number(r.offset), length: r.length })), committed);
      if ((hash.rows[0]?.sha ?? sha256(Buffer.alloc(0))) !== job.gen.digest(0, committed)) problems.push(`bytes below ${committed} differ`);
      return problems.map((p) => `${job.ids.commandId}: ${p}`);
    } finally {
      c.release();
    }
  }

  it(`${COMMANDS} commands × ${BYTES / MiB} MB, ${KILLS} SIGKILLs: no byte lost or duplicated, one result each`, async () => {
    const t0 = Date.now();
    const random = seededRandom(SEED);
    console.log(`crash storm seed ${SEED} (INGEST_CRASH_SEED=${SEED} repeats the kill moments)`);
    const jobs: Job[] = Array.from({ length: COMMANDS }, (_, i) => {
      const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
      const gen = new GeneratedOutput(`${SEED}:${i}`, BYTES + Math.floor(random() * 100_000));
      const cmd = runner.command(ids.commandId);
      cmd.generate(gen, 0);
      return { ids, gen, cmd };
    });
    const live = [await startChild(), await startChild()];
    for (const j of jobs) await h.startTask({ ...j.ids, runnerId: 'runner-storm' });

    // Output keeps coming while the kills happen: before kill k the commands may have written (k+1)/(KILLS+1) of it.
    let share = 1 / (KILLS + 1);
    let producing = true;
    const producer = (async () => {
      while (producing) {
        for (const j of jobs) {
          const target = Math.floor(j.gen.total * share);
          if (j.cmd.length < target) j.cmd.grow(Math.min(64 * 1024, target - j.cmd.length));
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();

    const atKills: string[] = [];
    const restarts: Promise<void>[] = [];
    for (let k = 0; k < KILLS; k++) {
      await new Promise((r) => setTimeout(r, 100 + Math.floor(random() * 1400)));
      // The victim is the older of the two live instances (a restarting one is not yet in `live`).
      await waitFor(() => live.length > 0, 60_000, 'a live ingestor to kill');
      const victim = live.shift()!;
      await victim.kill();
      children.delete(victim);
      atKills.push(...(await Promise.all(jobs.map(prefixProblems))).flat());
      restarts.push(startChild().then((c) => void live.push(c)));
      share = Math.min(1, (k + 2) / (KILLS + 1));
    }
    const killPhase = Date.now() - t0;
    await Promise.all(restarts);
    await waitFor(() => jobs.every((j) => j.cmd.length === j.gen.total), 60_000, 'all output written');
    producing = false;
    await producer;
    for (const j of jobs) j.cmd.exit({ exitCode: 0 });
    await waitFor(async () => (await Promise.all(jobs.map((j) => h.cursor(j.ids.commandId)))).every((c) => c?.result_state === 'readable'), 120_000, 'every result readable', 250);
    const settled = Date.now() - t0;

    let lost = 0;
    let duplicated = 0;
    let duplicateEvents = 0;
    let logsLost = 0;
    let logsDuplicated = 0;
    const mismatched: string[] = [];
    for (const j of jobs) {
      const digest = j.gen.digest();
      const stored = await storedLayout(h.pool, j.ids.commandId);
      const logs = await logsLayout(h.env.nats, h.t, j.ids.commandId);
      const covered = (l: typeof stored) => l.runs.reduce((n, r) => n + r.to - r.from, 0);
      lost += j.gen.total - covered(stored);
      duplicated += stored.duplicatedBytes;
      logsLost += j.gen.total - covered(logs);
      logsDuplicated += logs.duplicatedBytes;
      if (stored.runs.length !== 1 || stored.runs[0]!.sha !== digest) mismatched.push(`${j.ids.commandId} command_log`);
      if (logs.runs.length !== 1 || logs.runs[0]!.sha !== digest) mismatched.push(`${j.ids.commandId} LOGS`);
      const types = (await h.cmdEvents(j.ids.commandId)).map((e) => e.type);
      duplicateEvents += types.length - new Set(types).size + Math.max(0, logs.exits.length - 1);
      expect(types).toEqual(['CommandExited', 'CommandResultReadable']);
    }
    const resumedReads = jobs.reduce((n, j) => n + (runner.readLogCalls.get(j.ids.commandId) ?? []).filter((c) => c.fromOffset > 0).length, 0);
    const total = jobs.reduce((n, j) => n + j.gen.total, 0);
    console.log(
      [
        `crash storm: ${COMMANDS} commands, ${(total / MiB).toFixed(1)} MiB, ${KILLS} SIGKILLs, ${started} ingestor processes, ${resumedReads} resumed reads; kills done at ${(killPhase / 1000).toFixed(1)} s, all readable at ${(settled / 1000).toFixed(1)} s, checked at ${((Date.now() - t0) / 1000).toFixed(1)} s`,
        `  command_log: bytes lost ${lost}, bytes duplicated ${duplicated}; LOGS: bytes lost ${logsLost}, bytes duplicated ${logsDuplicated}`,
        `  duplicate completion events ${duplicateEvents}; SHA-256 mismatches with the runner's digest ${mismatched.length}; prefix problems at kills ${atKills.length}`,
      ].join('\n'),
    );
    expect(atKills).toEqual([]);
    expect({ lost, duplicated, logsLost, logsDuplicated, duplicateEvents, mismatched }).toEqual({ lost: 0, duplicated: 0, logsLost: 0, logsDuplicated: 0, duplicateEvents: 0, mismatched: [] });
    expect(resumedReads).toBeGreaterThan(0);
  }, 600_000);
});
