// The load figures: durable ingestion throughput, many background tasks on one runner, and recovery
// after a coordinator crash with many tasks in flight.
import { performance } from 'node:perf_hooks';
import { MiB, rawBothThroughput, rawJetStreamThroughput, rawPostgresThroughput } from './ingest/bench-env';
import { descendants, plainSleeps, pssMiB, rssMiB } from './baselines';
import { Api, benchConversation, submitCommand } from './client';
import type { BenchStack } from './stack';
import { percentile, value, type Row } from './table';

const median = (xs: number[]) => percentile(xs, 50);

/** Runs `fn` over `items` with at most `width` calls at once. */
async function pool<T, R>(items: T[], width: number, fn: (x: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}

/**
 * `head -c N /dev/urandom` through the stack until its result is readable (every byte committed to
 * Postgres and LOGS), against raw JetStream publishes and raw Postgres inserts of the same size.
 */
export async function durableIngestion(s: BenchStack, mib: number, runs: number): Promise<Row[]> {
  const bytes = mib * MiB;
  const conv = await benchConversation(s.baseUrl, await s.token(), 'bench ingestion');
  const t = s.topology;
  const ours: number[] = [];
  const jsAsync: number[] = [];
  const jsSync: number[] = [];
  const pg: number[] = [];
  const both: number[] = [];
  try {
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      const { taskId } = await conv.command(`head -c ${bytes} /dev/urandom`);
      const result = await conv.sse.arrival('task.result', taskId, 900_000);
      const seconds = (result.at - t0) / 1000;
      if (result.data.resultState !== 'readable' || result.data.outputBytes !== bytes) throw new Error(`ingestion run ended ${JSON.stringify(result.data)}`);
      ours.push(mib / seconds);
      // Baselines of the same size (random bytes like ours: compressible data would flatter Postgres).
      jsAsync.push(await rawJetStreamThroughput(s.nats, t.log('rawasync'), bytes, 64));
      jsSync.push(await rawJetStreamThroughput(s.nats, t.log('rawsync'), bytes, 1));
      pg.push(await rawPostgresThroughput(s.pool, bytes));
      both.push(await rawBothThroughput(s.pool, s.nats, t.log('rawboth'), bytes));
      for (const sub of ['rawasync', 'rawsync', 'rawboth']) await s.nats.jsm.streams.purge(t.streams.LOGS, { filter: t.log(sub) });
    }
  } finally {
    await conv.close();
  }
  const figure = `durable ingestion: ${mib} MiB of random output, command start → result readable (median of ${runs})`;
  const oursM = value(median(ours), 'MiB/s');
  return [
    { figure, ours: oursM, baselineLabel: 'raw JetStream publish, async (64 KiB, 64 in flight)', baseline: value(median(jsAsync), 'MiB/s') },
    { figure, ours: oursM, baselineLabel: 'raw JetStream publish, sync (64 KiB, one ack at a time)', baseline: value(median(jsSync), 'MiB/s') },
    { figure, ours: oursM, baselineLabel: 'raw Postgres insert, batched (16 × 64 KiB bytea rows per commit)', baseline: value(median(pg), 'MiB/s') },
    {
      figure,
      ours: oursM,
      baselineLabel: 'raw Postgres batch commit + the same rows to JetStream',
      baseline: value(median(both), 'MiB/s'),
      note: 'ours includes the command itself, the runner spooling to disk, gRPC ReadLog, both durable writes, the cursor commit and the Ack; the baselines only write.',
    },
  ];
}

/** `n` background `sleep 3600` tasks at once on the one runner: time to all running, memory per task, stop-all. */
export async function concurrentBackground(s: BenchStack, n: number): Promise<Row[]> {
  const conv = await benchConversation(s.baseUrl, await s.token(), 'bench concurrency');
  const runner = s.pid('sandbox-runner');
  try {
    const before = rssMiB(runner);
    const t0 = performance.now();
    const tasks = await pool(Array.from({ length: n }), 8, () => conv.command('sleep 3600'));
    await Promise.all(tasks.map((x) => conv.sse.arrival('task.started', x.taskId, 600_000)));
    const allRunningMs = performance.now() - t0;
    await Promise.all(tasks.map((x) => conv.sse.arrival('task.backgrounded', x.taskId, 600_000)));
    await new Promise((r) => setTimeout(r, 1000));
    const runnerPerTask = Math.max(0, rssMiB(runner) - before) / n;
    const procs = descendants(runner);
    const procPerTask = procs.reduce((sum, p) => sum + pssMiB(p), 0) / n;
    const t1 = performance.now();
    const r = await conv.api.call('POST', `/v1/conversations/${conv.id}/stop-all`, {});
    // 503: the gateway gave up waiting for the coordinator, which goes on stopping (and its epoch sweep
    // stops whatever it had not reached): a client would watch the tasks, as the bench does.
    if (r.status !== 202 && r.status !== 503) throw new Error(`stop-all answered ${r.status}: ${JSON.stringify(r.json)}`);
    const stopAllAnswer = `${r.status}${r.status === 503 ? ` (${String(r.json?.error?.message ?? '')})` : ''}`;
    await Promise.all(tasks.map((x) => conv.sse.arrival('task.finished', x.taskId, 600_000)));
    const stopAllMs = performance.now() - t1;
    const plain = await plainSleeps(n);
    const figure = `${n} concurrent background tasks on one runner (\`sleep 3600\`)`;
    return [
      { figure: `${figure}: POST ×${n} → all running`, ours: value(allRunningMs / 1000, 's'), baselineLabel: `plain spawn of ${n} \`bash -c\``, baseline: value(plain.spawnAllMs / 1000, 's') },
      {
        figure: `${figure}: memory per task`,
        ours: value(runnerPerTask + procPerTask, 'MiB'),
        baselineLabel: 'plain spawn: PSS of the child + RSS its node parent gained',
        baseline: value(plain.processMiBPerTask + plain.parentMiBPerTask, 'MiB'),
        note: `ours = ${runnerPerTask.toFixed(3)} MiB RSS growth of the runner process per task (ReadLog streams, spool tailers, bookkeeping; V8 grows its heap in steps, so small counts are noisy) + ${procPerTask.toFixed(3)} MiB PSS per task of the runner's ${procs.length} descendant processes (sandbox, reaping init, the command); plain = ${plain.processMiBPerTask.toFixed(3)} + ${plain.parentMiBPerTask.toFixed(3)} MiB. Growth below 0 (a GC) counts as 0.`,
      },
      {
        figure: `${figure}: stop-all → all ${n} cancelled`,
        ours: value(stopAllMs / 1000, 's'),
        baselineLabel: `SIGTERM of ${n} plain children → all exited`,
        baseline: value(plain.killAllMs / 1000, 's'),
        note: `stop-all answered ${stopAllAnswer} once the epoch's end was recorded; the coordinator then signals the tasks in the background, 4 at a time, each fenced by its generation at the runner, and each ends cancelled once its exit is proven.`,
      },
    ];
  } finally {
    await conv.close();
  }
}

const TERMINAL = ['succeeded', 'failed', 'cancelled', 'timed_out', 'lost'];

/** Submits `n` short tasks through the gateway, optionally SIGKILLs the coordinator then, and waits until all are settled. */
async function settleRun(s: BenchStack, n: number, crash: boolean) {
  const api = new Api(s.baseUrl, await s.token());
  const convs = await pool(Array.from({ length: 10 }), 4, async () => (await api.call('POST', '/v1/conversations', { title: 'bench crash' })).json.id as string);
  const ids = await pool(Array.from({ length: n }), 16, async (_, i) => (await submitCommand(api, convs[i % convs.length]!, `echo task ${i}`)).taskId);
  const settled = async () => (await s.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM tasks WHERE task_id = ANY($1) AND status = ANY($2)`, [ids, TERMINAL])).rows[0]!.n;
  const t0 = performance.now();
  let inFlight = 0;
  let restartMs = 0;
  if (crash) {
    inFlight = n - (await settled());
    await s.kill('task-coordinator');
    const r0 = performance.now();
    await s.restart('task-coordinator');
    restartMs = performance.now() - r0;
  }
  for (;;) {
    if ((await settled()) === n) break;
    // About a task a second is very slow even on a loaded 2-core machine: past that, something is stuck.
    const limitMs = Math.max(180_000, n * 1000);
    if (performance.now() - t0 > limitMs) throw new Error(`tasks not settled after ${limitMs / 1000} s (${await settled()}/${n}); stuck?`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const ms = performance.now() - t0;
  const statuses = (await s.pool.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM tasks WHERE task_id = ANY($1) GROUP BY status`, [ids])).rows;
  return { ms, inFlight, restartMs, statuses: statuses.map((r) => `${r.n} ${r.status}`).join(', ') };
}

/** `n` short tasks in flight, coordinator SIGKILLed and restarted: time until all settled, against the same without a crash. */
export async function crashRecovery(s: BenchStack, n: number): Promise<Row[]> {
  const calm = await settleRun(s, n, false);
  const crashed = await settleRun(s, n, true);
  return [
    {
      figure: `recovery after a coordinator SIGKILL with ${n} tasks in flight (\`echo\`): kill → all settled`,
      ours: value(crashed.ms / 1000, 's'),
      baselineLabel: `the same ${n} tasks, no crash: all submitted → all settled`,
      baseline: value(calm.ms / 1000, 's'),
      note: `killed with ${crashed.inFlight} of ${n} unsettled; the restart (a new process compiling its TypeScript sources on start, to /readyz) took ${(crashed.restartMs / 1000).toFixed(1)} s of it; statuses: ${crashed.statuses} (no crash: ${calm.statuses}).`,
    },
  ];
}
