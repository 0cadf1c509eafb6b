import { spawn } from 'node:child_process';
import { forEachSandbox, runBench } from './bench-main';
import { fmt, pct } from './bench-support';

/**
 * Exec → first byte: from the Exec call to the first output chunk of a following ReadLog (gRPC on
 * loopback, sandbox launch, raw file → spool → reader), against a plain child_process.spawn of the
 * same command to its first stdout byte, interleaved in the same run so both see the same load.
 * Run: node bench/runner/run.js bench/runner/exec-first-byte.bench.ts  (NATS up; BENCH_N, BENCH_SANDBOX=bwrap,unshare)
 */
const N = Number(process.env.BENCH_N ?? 200);
const WARMUP = 20;
const COMMAND = 'echo x';

function plainFirstByte(): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn('bash', ['-c', COMMAND], { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout.once('data', () => resolve(performance.now() - t0));
    child.once('error', reject);
  });
}

runBench(() =>
  forEachSandbox(async (r) => {
    const runner: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < WARMUP + N; i++) {
      const a = (await r.run(COMMAND)).firstByteMs;
      const b = await plainFirstByte();
      if (i >= WARMUP) {
        runner.push(a);
        plain.push(b);
      }
    }
    const row = (name: string, xs: number[]) => `${name.padEnd(34)} p50 ${fmt(pct(xs, 50))} ms   p99 ${fmt(pct(xs, 99))} ms`;
    process.stdout.write(`Exec → first byte, ${N} runs, sandbox ${r.runner.containment.sandbox}, cgroups ${r.runner.containment.cgroups}\n`);
    process.stdout.write(`${row('runner (Exec + ReadLog follow)', runner)}\n${row('plain child_process.spawn', plain)}\n`);
    process.stdout.write(`ratio runner/plain                 p50 ${fmt(pct(runner, 50) / pct(plain, 50), 1)}x   p99 ${fmt(pct(runner, 99) / pct(plain, 99), 1)}x\n\n`);
  }),
);
