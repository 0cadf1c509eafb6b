import { benchRunner, sandboxes } from './bench-support';

export type BenchRunner = Awaited<ReturnType<typeof benchRunner>>;

/** Runs `body` once per sandbox of BENCH_SANDBOX, each against a runner of its own stopped afterwards. */
export async function forEachSandbox(body: (r: BenchRunner) => Promise<void>): Promise<void> {
  for (const sandbox of sandboxes()) {
    const r = await benchRunner(sandbox);
    try {
      await body(r);
    } finally {
      await r.stop();
    }
  }
}

/** Runs a bench as the process: exit code 0 once `main` resolves, 1 with the error on stderr if it fails. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`${String(err)}\n`);
      process.exit(1);
    },
  );
}
