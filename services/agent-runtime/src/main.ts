import { loadConfig } from '@handplane/contracts';
import { createLogger, setupTracing } from '@handplane/platform';
import { startRuntime } from './service';

async function main() {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  setupTracing('agent-runtime');
  const logger = createLogger('agent-runtime', config.LOG_LEVEL);
  const runtime = await startRuntime(config, { logger });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    runtime.stop().then(
      () => process.exit(0),
      (e) => {
        logger.error({ err: e }, 'stop failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
