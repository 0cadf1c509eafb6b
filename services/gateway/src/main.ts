import { loadConfig } from '@handplane/contracts';
import { createLogger } from '@handplane/platform';
import { startGateway } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
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
