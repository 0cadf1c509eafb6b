import { loadConfig } from '@handplane/contracts';
import { createLogger, setupTracing } from '@handplane/platform';
import { startGateway } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  setupTracing('gateway');
  const logger = createLogger('gateway', config.LOG_LEVEL);
  const gateway = await startGateway(config, { logger });
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'stopping');
    void gateway.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
