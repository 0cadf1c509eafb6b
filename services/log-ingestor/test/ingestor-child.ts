// Runs one ingestor in its own process, so a test can SIGKILL it mid-stream (a real crash:
// no clean stop, leases left to expire). Started with `node -e` after the TypeScript require hook.
import { loadConfig } from '@handplane/contracts';
import { createLogger } from '@handplane/platform';
import { startIngestor } from '../src/service';

void (async () => {
  const config = loadConfig();
  const running = await startIngestor(config, { logger: createLogger('ingestor-child', 'silent'), leaseMs: Number(process.env.TEST_LEASE_MS ?? 15_000), instanceId: process.env.TEST_INSTANCE_ID });
  process.stdout.write(`ready ${running.httpPort}\n`);
})().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
