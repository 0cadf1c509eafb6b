import { loadConfig } from '@handplane/contracts';
import { createLogger, loadRunnerClientTls, setupTracing, stopOnSignals } from '@handplane/platform';
import { startCoordinator } from './service';

async function main(): Promise<void> {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  const tracing = setupTracing('task-coordinator');
  const logger = createLogger('task-coordinator', config.LOG_LEVEL);
  const coordinator = await startCoordinator(config, { logger, runnerTls: loadRunnerClientTls() });
  // On SIGTERM/SIGINT: stop, flush the last spans, exit.
  stopOnSignals({ stop: () => coordinator.stop(), tracing, log: (e, msg) => ('err' in e ? logger.error(e, msg) : logger.info(e, msg)) });
}

main().catch((e) => {
  // The logger may not exist yet: a bad configuration fails before it.
  console.error(e);
  process.exit(1);
});
