// `npm run bench [-- --quick] [-- --json <file>] [-- --only roundtrip,sse,…]`: starts the real stack
// (five service processes, unique NATS prefix, fresh database), measures every figure next to a
// baseline taken in the same run, and prints ONE table (Markdown). See bench/README.md.
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { concurrentBackground, crashRecovery, durableIngestion } from './figures-load';
import { commandRoundTrip, firstByteToSse, stopToExit } from './figures-latency';
import { projectionRebuild } from './figures-rebuild';
import { startBenchStack, type BenchStack } from './stack';
import { renderTable, type Row } from './table';

/** Sizes of each figure: the full run (README table) and `--quick` (a minute or two while developing). */
export const SIZES = {
  full: { roundtrip: 100, sse: 100, stop: 30, ingestMiB: 64, ingestRuns: 2, concurrent: 200, crash: 1000 },
  quick: { roundtrip: 10, sse: 10, stop: 5, ingestMiB: 16, ingestRuns: 1, concurrent: 20, crash: 100 },
};

type Sizes = (typeof SIZES)['full'];
const FIGURES: Record<string, (s: BenchStack, z: Sizes) => Promise<Row[]>> = {
  roundtrip: (s, z) => commandRoundTrip(s, z.roundtrip),
  sse: (s, z) => firstByteToSse(s, z.sse),
  ingest: (s, z) => durableIngestion(s, z.ingestMiB, z.ingestRuns),
  stop: (s, z) => stopToExit(s, z.stop),
  concurrent: (s, z) => concurrentBackground(s, z.concurrent),
  crash: (s, z) => crashRecovery(s, z.crash),
  // Last: it replays everything the figures before it appended to TASKS.
  rebuild: (s) => projectionRebuild(s.nats, s.topology),
};

export interface BenchArgs {
  quick: boolean;
  json?: string;
  only: string[];
  /** `--size crash=300,concurrent=50`: overrides of the sizes. */
  sizes: Partial<Record<keyof Sizes, number>>;
}

export function parseArgs(argv: string[]): BenchArgs {
  const a: BenchArgs = { quick: false, only: Object.keys(FIGURES), sizes: {} };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') a.quick = true;
    else if (arg === '--json' && argv[i + 1]) a.json = argv[++i];
    else if (arg === '--only' && argv[i + 1]) a.only = argv[++i]!.split(',');
    else if (arg === '--size' && argv[i + 1]) {
      for (const kv of argv[++i]!.split(',')) {
        const [k, v] = kv.split('=');
        if (!k || !(k in SIZES.full) || !/^[1-9]\d*$/.test(v ?? '')) throw new Error(`bad --size ${kv}; use key=positive integer with keys ${Object.keys(SIZES.full).join(', ')}`);
        a.sizes[k as keyof Sizes] = Number(v);
      }
    }
    else throw new Error(`unknown argument ${arg}; use --quick, --json <file>, --only ${Object.keys(FIGURES).join(',')}, --size key=n,…`);
  }
  const unknown = a.only.filter((f) => !(f in FIGURES));
  if (unknown.length) throw new Error(`unknown figure ${unknown.join(', ')}; known: ${Object.keys(FIGURES).join(', ')}`);
  return a;
}

/** Stack settings of the bench (documented in bench/README.md). */
export const BENCH_ENV = { FOREGROUND_WINDOW_MS: '3000' };

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  const sizes = { ...(args.quick ? SIZES.quick : SIZES.full), ...args.sizes };
  const startedAt = new Date().toISOString();
  const load0 = loadavg()[0]!;
  const log = (m: string) => process.stderr.write(`${m}\n`);
  log(`starting the stack (load average ${load0.toFixed(2)} on ${cpus().length} cores) …`);
  const s = await startBenchStack(BENCH_ENV);
  const rows: Row[] = [];
  const failed: string[] = [];
  try {
    for (const name of args.only) {
      const t0 = performance.now();
      log(`${name} …`);
      try {
        const dead = s.dead();
        if (dead.length) throw new Error(`service exited during an earlier figure: ${dead.join(', ')}`);
        const got = await FIGURES[name]!(s, sizes);
        rows.push(...got);
        // Each figure as soon as it is measured: a run stopped later keeps what it had.
        log(`${renderTable(got, `${name} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`)}\n`);
      } catch (e) {
        failed.push(`${name}: ${(e as Error).message}`);
        log(`${name} FAILED: ${(e as Error).stack}\n--- service logs ---\n${s.logs()}`);
      }
    }
  } finally {
    await s.stop();
  }
  const load1 = loadavg()[0]!;
  const title = `Handplane bench (${args.quick ? 'quick' : 'full'}), ${startedAt}; ${cpus().length} cores, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB; load average ${load0.toFixed(2)} at the start, ${load1.toFixed(2)} at the end`;
  process.stdout.write(`\n${renderTable(rows, title)}\n`);
  if (failed.length) process.stdout.write(`\nFAILED figures:\n${failed.map((f) => `- ${f}`).join('\n')}\n`);
  if (args.json) writeFileSync(args.json, `${JSON.stringify({ startedAt, quick: args.quick, cores: cpus().length, loadavg: [load0, load1], sizes, rows, failed }, null, 2)}\n`);
  return failed.length ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
