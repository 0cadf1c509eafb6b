import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Conflict } from '@handplane/kernel';
import { PROJECTIONS } from '@handplane/contracts';
import { createLogger, createPool, projectorPosition, rebuildProjection, runProjector, type Projection, type RunningProjector } from '@handplane/platform';
import { freshDatabase, NATS_URL, testNats, waitFor } from '@handplane/testing';
import type { Pool } from 'pg';
import { conversationsProjection } from '../services/gateway/src/app/conversations.projection';
import { commandLogIndexProjection, commandsProjection } from '../services/gateway/src/app/read-models/command-read-models.projection';
import { queuesProjection, runsProjection, taskPromptsProjection, todosProjection } from '../services/gateway/src/app/read-models/conversation-read-models.projection';
import { epochsProjection } from '../services/task-coordinator/src/app/epochs';
import { tasksProjection } from '../services/task-coordinator/src/app/tasks.projection';
import { diff, dump } from './projections/compare';
import { prng, Workload } from './projections/workload';

const logger = createLogger('projections-test', process.env.TEST_LOG_LEVEL ?? 'silent');

/**
 * Issue 8 part 1: every read model is a projection; a rebuild from sequence 1, run while events keep
 * arriving and the live projectors keep running, swaps in a model equal row for row to a live one that
 * was never rebuilt and to one rebuilt from scratch in a fresh database.
 */
describe('projection rebuilds (real NATS + Postgres, randomized workload)', () => {
  const seed = Number(process.env.PROJECTION_SEED ?? Math.floor(Math.random() * 2 ** 31));
  let env: Awaited<ReturnType<typeof testNats>>;
  const dbs: Awaited<ReturnType<typeof freshDatabase>>[] = [];
  const pools: Pool[] = [];
  let projections: Projection[];
  let rebuilt: Pool; // live projectors, rebuilt mid-workload
  let control: Pool; // live projectors, never rebuilt
  const projectors: RunningProjector[] = [];
  let work: Workload;

  const urls = new Map<Pool, string>();
  const db = async (label: string) => {
    const d = await freshDatabase(label);
    dbs.push(d);
    const pool = createPool(d.url, 30);
    pools.push(pool);
    urls.set(pool, d.url);
    return pool;
  };
  // The last sequence each projection must have reached: the last message of its subjects.
  const target = (p: Projection) => {
    const stream = PROJECTIONS.find((x) => x.name === p.name)!.stream;
    return work.lastSeq[p.filterSubject ? `${stream}:cmd` : stream] ?? 0;
  };
  const caughtUp = async (pool: Pool) => {
    for (const p of projections) await waitFor(async () => (await projectorPosition(pool, p.name)) >= target(p), 60_000, `${p.name} caught up`);
  };

  beforeAll(async () => {
    process.stdout.write(`projection workload seed ${seed} (PROJECTION_SEED=${seed} to replay)\n`);
    env = await testNats('proj');
    const t = env.topology;
    projections = [conversationsProjection(t), runsProjection(t), todosProjection(t), queuesProjection(t), taskPromptsProjection(t), commandsProjection(t), commandLogIndexProjection(t), tasksProjection(t), epochsProjection(t)];
    rebuilt = await db('projlive');
    control = await db('projctl');
    for (const pool of [rebuilt, control]) for (const p of projections) projectors.push(runProjector(env.nats, pool, p, logger));
    work = new Workload(env.nats, t, prng(seed));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(projectors.map((p) => p.stop()));
    await Promise.all(pools.map((p) => p.end()));
    await Promise.all(dbs.map((d) => d.drop()));
    await env?.close();
  }, 60_000);

  it('covers every read model of the catalog, with the tables the catalog names', () => {
    expect(projections.map((p) => ({ name: p.name, tables: p.tables, stream: p.stream.replace(/^.*_/, '') }))).toEqual(
      PROJECTIONS.map((p) => ({ name: p.name, tables: p.tables, stream: p.stream })),
    );
  });

  it('rebuilds every projection while events keep arriving; rebuilt = live = rebuilt from scratch, row for row', async () => {
    await work.run(800);
    let writing = true;
    // Events keep arriving during every rebuild.
    const writer = (async () => {
      while (writing) {
        await work.run(5);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const reports = [];
    try {
      for (const p of projections) reports.push(await rebuildProjection(env.nats, rebuilt, p, { logger, batchSize: 200 }));
    } finally {
      writing = false;
      await writer;
    }
    await work.run(200); // and after them, on the swapped-in tables
    expect(work.published).toBeGreaterThan(1000);
    for (const r of reports) {
      expect(r.resumedFrom).toBe(0);
      expect(r.events).toBeGreaterThan(0);
      expect(r.rowsPerSecond).toBeGreaterThan(0);
    }
    await caughtUp(rebuilt);
    await caughtUp(control);

    const scratch = await db('projscratch');
    for (const p of projections) await rebuildProjection(env.nats, scratch, p, { logger });
    for (const p of projections) {
      const live = await dump(control, p);
      for (const [table, rows] of Object.entries(live)) expect({ table, rows: rows.length }).toEqual({ table, rows: expect.any(Number) });
      expect({ projection: p.name, differences: diff(await dump(rebuilt, p), live) }).toEqual({ projection: p.name, differences: [] });
      expect({ projection: p.name, differences: diff(await dump(scratch, p), live) }).toEqual({ projection: p.name, differences: [] });
      expect(await projectorPosition(scratch, p.name)).toBeGreaterThanOrEqual(target(p));
    }
    // The workload reached every table, so equal means something.
    for (const p of projections) for (const [table, rows] of Object.entries(await dump(control, p))) expect({ table, empty: rows.length === 0 }).toEqual({ table, empty: false });

    // LOGS headers reached the index: chunks of both streams, exit records and truncation markers.
    const kinds = await control.query<{ kind: string }>('SELECT DISTINCT kind FROM command_log_index ORDER BY kind');
    expect(kinds.rows.map((r) => r.kind)).toEqual(expect.arrayContaining(['exit', 'stderr', 'stdout']));

    // The comparison sees a single changed row.
    await scratch.query(`UPDATE runs SET detail = 'tampered' WHERE run_id = (SELECT min(run_id) FROM runs)`);
    const runs = projections.find((p) => p.name === 'runs')!;
    expect(diff(await dump(scratch, runs), await dump(control, runs))).toHaveLength(2);
  }, 400_000);

  it('a rebuild killed mid-way leaves the live model whole, and the next run resumes and finishes it', async () => {
    const tasks = projections.find((p) => p.name === 'tasks')!;
    await work.run(300); // enough TASKS events for several batches, also when this test runs alone
    await caughtUp(rebuilt);
    const before = await dump(rebuilt, tasks);
    let batches = 0;
    await expect(
      rebuildProjection(env.nats, rebuilt, tasks, {
        logger,
        batchSize: 20,
        onBatch: () => {
          if (++batches === 2) throw new Error('killed');
        },
      }),
    ).rejects.toThrow('killed');
    const progress = await rebuilt.query<{ status: string; seq: string }>(`SELECT status, seq FROM projection_rebuilds WHERE name = 'tasks'`);
    expect(progress.rows[0]!.status).toBe('failed');
    expect(Number(progress.rows[0]!.seq)).toBeGreaterThan(0);
    expect(diff(await dump(rebuilt, tasks), before)).toEqual([]); // readers never saw the shadow

    await work.run(100);
    const again = await rebuildProjection(env.nats, rebuilt, tasks, { logger, batchSize: 20 });
    expect(again.resumedFrom).toBe(Number(progress.rows[0]!.seq));
    await caughtUp(rebuilt);
    await caughtUp(control);
    expect(diff(await dump(rebuilt, tasks), await dump(control, tasks))).toEqual([]);
  });

  it('a rebuild process SIGKILLed mid-way: the live model stays whole, the lock is freed, the next run resumes', async () => {
    const runs = projections.find((p) => p.name === 'runs')!;
    await work.run(300);
    await caughtUp(rebuilt);
    const before = await dump(rebuilt, runs);
    const code = "require('./scripts/ts-register.js').register(); require('./e2e/projections/rebuild-child.ts');";
    const child = spawn(process.execPath, ['-e', code], {
      cwd: join(__dirname, '..'),
      env: { ...process.env, NATS_URL, NATS_PREFIX: env.prefix, DATABASE_URL: urls.get(rebuilt)! },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    const seqOf = async () => Number((await rebuilt.query<{ seq: string }>(`SELECT seq FROM projection_rebuilds WHERE name = 'runs' AND status = 'running'`)).rows[0]?.seq ?? 0);
    await waitFor(async () => (await seqOf()) > 0, 60_000, 'the child rebuild under way');
    child.kill('SIGKILL');
    expect(await exited).toBeNull();
    const reached = await seqOf();
    expect(reached).toBeGreaterThan(0); // killed, not finished: still `running`
    expect(diff(await dump(rebuilt, runs), before)).toEqual([]);

    // Postgres frees the dead session's lock once it notices the closed connection.
    let again: Awaited<ReturnType<typeof rebuildProjection>> | undefined;
    await waitFor(async () => {
      try {
        again = await rebuildProjection(env.nats, rebuilt, runs, { logger });
        return true;
      } catch (e) {
        if (e instanceof Conflict) return false;
        throw e;
      }
    }, 60_000, 'the lock of the killed rebuild freed');
    // A commit the dead client had sent may still land after `reached` was read: never less, never 0.
    expect(again!.resumedFrom).toBeGreaterThanOrEqual(reached);
    await caughtUp(rebuilt);
    await caughtUp(control);
    expect(diff(await dump(rebuilt, runs), await dump(control, runs))).toEqual([]);
  }, 180_000);

  it('two rebuilds of one projection at once: the second is refused while the first runs', async () => {
    const conversations = projections.find((p) => p.name === 'conversations')!;
    await work.run(100);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const first = rebuildProjection(env.nats, rebuilt, conversations, {
      logger,
      batchSize: 100,
      onBatch: async () => {
        entered();
        await gate;
      },
    });
    await inside;
    const second = rebuildProjection(env.nats, rebuilt, conversations, { logger });
    await expect(second).rejects.toBeInstanceOf(Conflict);
    await expect(second).rejects.toThrow(/already running/);
    release();
    await expect(first).resolves.toMatchObject({ name: 'conversations' });
    await caughtUp(rebuilt);
    await caughtUp(control);
    expect(diff(await dump(rebuilt, conversations), await dump(control, conversations))).toEqual([]);
  });
});
