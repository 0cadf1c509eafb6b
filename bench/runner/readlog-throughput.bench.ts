import { spawn } from 'node:child_process';
import { forEachSandbox, runBench } from './bench-main';
import { fmt, pct } from './bench-support';

/**
 * ReadLog throughput: a command that writes BENCH_MB MiB as fast as it can, read by a following
 * ReadLog from Exec to the exit record ("live"), and read again from the spool once finished
 * ("replay"), against a plain child_process.spawn of the same command read from its pipe. Runs are
 * interleaved in the same process, so all see the same machine.
 * Run: node bench/runner/run.js bench/runner/readlog-throughput.bench.ts  (NATS up; BENCH_MB, BENCH_RUNS, BENCH_SANDBOX)
 */
const MB = Number(process.env.BENCH_MB ?? 128);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const BYTES = MB * 1024 * 1024;
const COMMAND = `yes abcdefghijklmnopqrstuvwxyz | head -c ${BYTES}`;

function plain(): Promise<{ ms: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let bytes = 0;
    const child = spawn('bash', ['-c', COMMAND], { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout.on('data', (d: Buffer) => (bytes += d.length));
    child.once('error', reject);
    child.once('close', () => resolve({ ms: performance.now() - t0, bytes }));
  });
}

const mbps = (bytes: number, ms: number) => bytes / 1024 / 1024 / (ms / 1000);

runBench(() =>
  forEachSandbox(async (r) => {
    const live: number[] = [];
    const replay: number[] = [];
    const base: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const l = await r.run(COMMAND);
      if (l.bytes !== BYTES) throw new Error(`runner returned ${l.bytes} bytes, expected ${BYTES}`);
      live.push(mbps(l.bytes, l.totalMs));
      const p = await r.replay(r.lastId());
      replay.push(mbps(p.bytes, p.totalMs));
      const b = await plain();
      if (b.bytes !== BYTES) throw new Error(`plain spawn returned ${b.bytes} bytes`);
      base.push(mbps(b.bytes, b.ms));
    }
    const row = (name: string, xs: number[]) => `${name.padEnd(36)} p50 ${fmt(pct(xs, 50), 0)} MiB/s   p99 ${fmt(pct(xs, 99), 0)} MiB/s (slowest: ${fmt(Math.min(...xs), 0)})`;
    process.stdout.write(`ReadLog throughput, ${MB} MiB × ${RUNS}, sandbox ${r.runner.containment.sandbox}\n`);
    process.stdout.write(`${row('runner live (Exec → exit record)', live)}\n${row('runner replay (finished, from spool)', replay)}\n${row('plain child_process.spawn (pipe)', base)}\n`);
    process.stdout.write(`ratio live/plain   p50 ${fmt(pct(live, 50) / pct(base, 50))}   replay/plain p50 ${fmt(pct(replay, 50) / pct(base, 50))}\n\n`);
  }),
);
