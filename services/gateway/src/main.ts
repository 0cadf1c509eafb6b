import { loadConfig } from '@handplane/contracts';
import { createLogger, setupTracing, stopOnSignals } from '@handplane/platform';
import { startGateway } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  const tracing = setupTracing('gateway');
  const logger = createLogger('gateway', config.LOG_LEVEL);
  const gateway = await startGateway(config, { logger });
  // On SIGTERM/SIGINT: stop, flush the last spans, exit.
  stopOnSignals({ stop: () => gateway.stop(), tracing, log: (e, msg) => ('err' in e ? logger.error(e, msg) : logger.info(e, msg)) });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
