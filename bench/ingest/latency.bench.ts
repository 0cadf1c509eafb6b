// First byte to the live view: how long from a command printing a line to the `command.output` event
// the conversation's SSE forwards (measured on the CONV subject the gateway's SSE reads; the gateway
// adds one hop), next to raw JetStream and raw Postgres latency and throughput measured in the same run.
//   node -r ./scripts/ts-register.js bench/ingest/latency.bench.ts
// BENCH_SAMPLES (default 200) per configuration. The ingestor runs in its own process; the runner
// double is already streaming (the ingestor follows the command) when the byte is written, so the
// figure is ingestion latency, not claim latency. The line is durable (Postgres + LOGS) before it is shown.
import { performance } from 'node:perf_hooks';
import { cpus, loadavg } from 'node:os';
import { waitFor } from '@handplane/testing';
import { appendStartedTask, fmt, MiB, percentile, printTable, ratio, rawJetStreamLatency, rawJetStreamThroughput, rawPostgresLatency, rawPostgresThroughput } from './bench-env';
import { freshId, runBench, withIngestBench } from './ingest-bench';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 200);

runBench(() =>
  withIngestBench('benchlat', 'runner-lat', async ({ b, t, store, runner }) => {
    console.log('baselines …');
    const jsLat = await rawJetStreamLatency(b.env.nats, t.log('latbench'), SAMPLES);
    const pgLat = await rawPostgresLatency(b.pool, SAMPLES);
    const jsMbs = await rawJetStreamThroughput(b.env.nats, t.log('rawbench'), 64 * MiB);
    const pgMbs = await rawPostgresThroughput(b.pool, 64 * MiB);

    /** `SAMPLES` commands in a row: each prints one line once the ingestor follows it. */
    const firstByte = async (vars: Record<string, string>): Promise<number[]> => {
      const child = await b.ingestor(vars);
      const out: number[] = [];
      for (let i = 0; i < SAMPLES; i++) {
        const ids = { taskId: freshId('t'), commandId: freshId('c'), conversationId: freshId('v') };
        const cmd = runner.command(ids.commandId);
        const sub = b.env.nats.nc.subscribe(t.conv(ids.conversationId), { max: 1 });
        const shown = (async () => {
          for await (const _ of sub) return performance.now();
          throw new Error('subscription closed');
        })();
        await appendStartedTask(store, t, { ...ids, runnerId: 'runner-lat' }, 60_000);
        await waitFor(() => (runner.readLogCalls.get(ids.commandId)?.length ?? 0) > 0, 10_000, 'the ingestor to follow the command', 1);
        const t0 = performance.now();
        cmd.write(Buffer.from(`line ${i}\n`));
        out.push((await shown) - t0);
        cmd.exit({ exitCode: 0 });
      }
      await child.kill();
      return out;
    };
    const byDefault = await firstByte({});
    const fastFlush = await firstByte({ TEST_FLUSH_MS: '5' });

    const row = (label: string, s: number[]) => [label, fmt(percentile(s, 50), 2), fmt(percentile(s, 99), 2)];
    printTable(
      `First byte to the live view (ms, ${SAMPLES} samples each); load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} cores`,
      ['measure', 'p50 ms', 'p99 ms', 'p50 vs raw JetStream ack', 'p50 vs raw Postgres commit'],
      [
        [...row('raw JetStream publish → ack (small message)', jsLat), '1.00×', ''],
        [...row('raw Postgres insert → commit (small row)', pgLat), '', '1.00×'],
        [...row('ingestor, default (a quiet spell commits at once, then ≤ 1 commit per 50 ms)', byDefault), ratio(percentile(byDefault, 50), percentile(jsLat, 50)), ratio(percentile(byDefault, 50), percentile(pgLat, 50))],
        [...row('ingestor, TEST_FLUSH_MS=5 (≤ 1 commit per 5 ms)', fastFlush), ratio(percentile(fastFlush, 50), percentile(jsLat, 50)), ratio(percentile(fastFlush, 50), percentile(pgLat, 50))],
      ],
    );
    printTable('Raw throughput in the same run', ['measure', 'MB/s'], [
      ['raw JetStream publish (64 KiB random, 64 in flight, file store)', fmt(jsMbs)],
      ['raw Postgres insert (16 × 64 KiB random bytea rows per commit)', fmt(pgMbs)],
    ]);
  }),
);
