import { loadConfig } from '@handplane/contracts';
import { createLogger, loadRunnerClientTls, setupTracing } from '@handplane/platform';
import { startIngestor } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  setupTracing('log-ingestor');
  const logger = createLogger('log-ingestor', config.LOG_LEVEL);
  const running = await startIngestor(config, { logger, runnerTls: loadRunnerClientTls() });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    running.stop().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, 'unclean stop');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
