import { loadConfig } from '@handplane/contracts';
import { createLogger, loadRunnerClientTls, setupTracing } from '@handplane/platform';
import { startCoordinator } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  setupTracing('task-coordinator');
  const logger = createLogger('task-coordinator', config.LOG_LEVEL);
  const coordinator = await startCoordinator(config, { logger, runnerTls: loadRunnerClientTls() });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    coordinator.stop().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e) => {
  // The logger may not exist yet: a bad configuration fails before it.
  console.error(e);
  process.exit(1);
});
