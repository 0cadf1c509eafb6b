import { loadConfig } from '@handplane/contracts';
import { createLogger, loadRunnerClientTls, setupTracing, stopOnSignals } from '@handplane/platform';
import { startIngestor } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  const tracing = setupTracing('log-ingestor');
  const logger = createLogger('log-ingestor', config.LOG_LEVEL);
  const running = await startIngestor(config, { logger, runnerTls: loadRunnerClientTls() });
  // On SIGTERM/SIGINT: stop, flush the last spans, exit.
  stopOnSignals({ stop: () => running.stop(), tracing, log: (e, msg) => ('err' in e ? logger.error(e, msg) : logger.info(e, msg)) });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
