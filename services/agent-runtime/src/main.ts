import { loadConfig } from '@handplane/contracts';
import { createLogger, setupTracing, stopOnSignals } from '@handplane/platform';
import { startRuntime } from './service';

async function main() {
  const config = loadConfig();
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  const tracing = setupTracing('agent-runtime');
  const logger = createLogger('agent-runtime', config.LOG_LEVEL);
  const runtime = await startRuntime(config, { logger });
  // On SIGTERM/SIGINT: stop, flush the last spans, exit.
  stopOnSignals({ stop: () => runtime.stop(), tracing, log: (e, msg) => ('err' in e ? logger.error(e, msg) : logger.info(e, msg)) });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
