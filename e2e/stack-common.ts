import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDatabase, NATS_URL, testNats } from '@handplane/testing';

/** The log level of services run in-process by a test: silent unless TEST_LOG_LEVEL asks for more. */
export const testLogLevel = (): string => process.env.TEST_LOG_LEVEL ?? 'silent';

/**
 * What every in-process stack starts from: its own NATS prefix and database (both labelled
 * `label`), a temp data dir for the runner, and the variables that point the services at them.
 * `release` deletes all three; call it after the services stopped.
 */
export async function stackResources(label: string) {
  const nats = await testNats(label);
  const db = await freshDatabase(label);
  const dataDir = await mkdtemp(join(tmpdir(), `hp-${label}-`));
  return {
    nats,
    db,
    dataDir,
    vars: { NATS_URL, NATS_PREFIX: nats.prefix, DATABASE_URL: db.url },
    async release(): Promise<void> {
      await nats.close();
      await db.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The HTTP ports of gateway, coordinator, ingestor and agent runtime: ephemeral, read back once they listen. */
export const EPHEMERAL_SERVICE_PORTS = { GATEWAY_PORT: '0', COORDINATOR_PORT: '0', INGESTOR_PORT: '0', RUNTIME_PORT: '0' } as const;

/** An in-process runner on ephemeral ports of 127.0.0.1 whose stop ends its commands, so a test leaves no process behind. */
export const IN_PROCESS_RUNNER = { RUNNER_HOST: '127.0.0.1', RUNNER_PORT: '0', RUNNER_HTTP_PORT: '0', RUNNER_ON_SHUTDOWN: 'stop' } as const;
