// Runs one ingestor in its own process, so a test can SIGKILL it mid-stream (a real crash:
// no clean stop, leases left to expire). Started with `node -e` after the TypeScript require hook;
// OUTPUT_CAP_BYTES and the shared config come from the environment like in production.
import { loadConfig } from '@handplane/contracts';
import { createLogger } from '@handplane/platform';
import { startIngestor } from '../src/service';

const num = (name: string) => (process.env[name] ? Number(process.env[name]) : undefined);

void (async () => {
  const config = loadConfig();
  const running = await startIngestor(config, {
    logger: createLogger('ingestor-child', process.env.TEST_CHILD_LOG_LEVEL ?? 'silent'),
    leaseMs: num('TEST_LEASE_MS') ?? 15_000,
    claimIntervalMs: num('TEST_CLAIM_INTERVAL_MS'),
    flushMs: num('TEST_FLUSH_MS'),
    instanceId: process.env.TEST_INSTANCE_ID,
  });
  // A bench asks for the buffering high-water marks of this process.
  process.on('SIGUSR2', () => process.stdout.write(`stats ${JSON.stringify(running.stats())}\n`));
  process.stdout.write(`ready ${running.httpPort}\n`);
})().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
