// The frame both ingestion benches run in: their environment, a runner double already
// heart-beating, and the process exit code. Not part of any test run.
import { randomBytes } from 'node:crypto';
import type { Topology } from '@handplane/contracts';
import { EventStore } from '@handplane/platform';
import { RunnerDouble } from '../../services/log-ingestor/test/runner-double';
import { benchEnv } from './bench-env';

/** A fresh id with prefix `p` (task, command and conversation ids of one sample). */
export const freshId = (p: string) => `${p}${randomBytes(5).toString('hex')}`;

export interface IngestBench {
  readonly b: Awaited<ReturnType<typeof benchEnv>>;
  readonly t: Topology;
  readonly store: EventStore;
  readonly runner: RunnerDouble;
}

/**
 * Runs `body` with a bench environment labelled `label` and a runner double registered as
 * `runnerId` (64 KiB records, like the real runner); both are stopped afterwards, also on failure.
 */
export async function withIngestBench(label: string, runnerId: string, body: (s: IngestBench) => Promise<void>): Promise<void> {
  const b = await benchEnv(label);
  const t = b.env.topology;
  const store = new EventStore(b.env.nats);
  const runner = await RunnerDouble.start(b.env.nats, t.runnersBucket, runnerId, { chunkBytes: 64 * 1024 });
  runner.keepAlive(1000);
  try {
    await body({ b, t, store, runner });
  } finally {
    await runner.stop();
    await b.close();
  }
}

/** Runs a bench as the process: exit code 0 once `main` resolves, 1 with the error printed if it fails. */
export function runBench(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
}
