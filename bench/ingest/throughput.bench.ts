// End-to-end durable ingestion throughput of the log ingestor, next to raw JetStream publish and raw
// Postgres insert throughput measured in the same run on the same machine.
//   node -r ./scripts/ts-register.js bench/ingest/throughput.bench.ts
// BENCH_MB (default 1024): size of the single big command. The ingestor runs in its own process, fed
// by the runner double (generated hostile bytes, 64 KiB records like the real runner); its RSS is
// sampled from /proc every 100 ms. "Durable" = rows committed in Postgres and chunks acked by LOGS.
import { performance } from 'node:perf_hooks';
import { cpus, loadavg } from 'node:os';
import { GeneratedOutput } from '../../services/log-ingestor/test/generated-output';
import { appendStartedTask, childStats, fmt, MiB, printTable, ratio, rawBothThroughput, rawJetStreamThroughput, rawPostgresThroughput, rssMiB } from './bench-env';
import { freshId, runBench, withIngestBench } from './ingest-bench';

const BIG = Number(process.env.BENCH_MB ?? 1024) * MiB;

runBench(() =>
  withIngestBench('benchtp', 'runner-bench', async ({ b, t, store, runner }) => {
    // Baselines of the same size as the big run: a gigabyte also costs Postgres checkpoints and NATS file blocks.
    console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}; baselines (${fmt(BIG / MiB, 0)} MiB each) …`);
    const rawJs = await rawJetStreamThroughput(b.env.nats, t.log('rawbench'), BIG);
    await b.env.nats.jsm.streams.purge(t.streams.LOGS);
    const rawPg = await rawPostgresThroughput(b.pool, BIG);
    const rawBoth = await rawBothThroughput(b.pool, b.env.nats, t.log('bothbench'), BIG);
    await b.env.nats.jsm.streams.purge(t.streams.LOGS);

    /** Starts commands of `bytes` each on the double, waits until every result is readable; MB/s of output and the ingestor's memory. */
    const ingest = async (label: string, count: number, bytes: number, vars: Record<string, string>) => {
      const child = await b.ingestor(vars);
      const pid = child.process.pid!;
      const idle = rssMiB(pid).now;
      let peakSampled = idle;
      const sampler = setInterval(() => (peakSampled = Math.max(peakSampled, rssMiB(pid).now)), 100);
      const ids = Array.from({ length: count }, () => ({ taskId: freshId('t'), commandId: freshId('c'), conversationId: freshId('v') }));
      const t0 = performance.now();
      for (const i of ids) {
        const cmd = runner.command(i.commandId);
        cmd.generate(new GeneratedOutput(i.commandId, bytes, { noNewline: true }));
        cmd.exit({ exitCode: 0 });
        await appendStartedTask(store, t, { ...i, runnerId: 'runner-bench' });
      }
      for (;;) {
        const r = await b.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ingest_cursors WHERE command_id = ANY($1) AND result_state = 'readable'`, [ids.map((i) => i.commandId)]);
        if (r.rows[0]!.n === count) break;
        await new Promise((res) => setTimeout(res, 50));
      }
      const seconds = (performance.now() - t0) / 1000;
      clearInterval(sampler);
      const stats = await childStats(child);
      const rss = rssMiB(pid);
      const stored = await b.pool.query<{ n: string }>('SELECT coalesce(sum(octet_length(data)), 0)::bigint AS n FROM command_log WHERE command_id = ANY($1)', [ids.map((i) => i.commandId)]);
      await child.kill();
      // Free the disk for the next run (a gigabyte in each store).
      await b.pool.query('DELETE FROM command_log WHERE command_id = ANY($1)', [ids.map((i) => i.commandId)]);
      for (const i of ids) await b.env.nats.jsm.streams.purge(t.streams.LOGS, { filter: t.log(i.commandId) });
      const mbs = (count * bytes) / MiB / seconds;
      const rssPeak = Math.max(rss.peak, peakSampled);
      console.log(`${label}: ${fmt(mbs)} MB/s, stored ${fmt(Number(stored.rows[0]!.n) / MiB)} MiB, RSS ${fmt(idle)} → ${fmt(rssPeak)} MiB, buffered ≤ ${stats.maxBufferedBytes} B`);
      return { label, mbs, storedMiB: Number(stored.rows[0]!.n) / MiB, rss: `${fmt(idle)} → ${fmt(rssPeak)}`, buffered: stats.maxBufferedBytes };
    };

    const results = [
      await ingest(`1 command × ${fmt(BIG / MiB, 0)} MiB, no cap`, 1, BIG, { OUTPUT_CAP_BYTES: '0' }),
      await ingest(`8 commands × ${fmt(BIG / 8 / MiB, 0)} MiB at once, no cap`, 8, BIG / 8, { OUTPUT_CAP_BYTES: '0' }),
      await ingest(`1 command × ${fmt(BIG / MiB, 0)} MiB, default cap 256 MiB`, 1, BIG, {}),
    ];
    printTable(
      `Log ingestion throughput (MB/s of command output made durable: Postgres rows + LOGS chunks + cursor, then Ack); load average at the end ${loadavg()[0]!.toFixed(2)} on ${cpus().length} cores`,
      ['measure', 'MB/s', 'vs raw JetStream', 'vs raw Postgres', 'vs both raw', 'stored MiB', 'ingestor RSS idle → peak MiB', 'max buffered per command'],
      [
        ['raw JetStream publish (64 KiB random, 64 in flight, file store)', fmt(rawJs), '1.00×', '', '', '', '', ''],
        ['raw Postgres insert (16 × 64 KiB random bytea rows per commit)', fmt(rawPg), '', '1.00×', '', '', '', ''],
        ['both raw: one commit of 16 rows while the same 16 go to LOGS', fmt(rawBoth), ratio(rawBoth, rawJs), ratio(rawBoth, rawPg), '1.00×', '', '', ''],
        ...results.map((r) => [r.label, fmt(r.mbs), ratio(r.mbs, rawJs), ratio(r.mbs, rawPg), ratio(r.mbs, rawBoth), fmt(r.storedMiB), r.rss, `${fmt(r.buffered / MiB, 2)} MiB`]),
      ],
    );
  }),
);
