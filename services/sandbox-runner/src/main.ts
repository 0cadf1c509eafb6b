import { loadConfig } from '@handplane/contracts';
import { setupTracing, stopOnSignals } from '@handplane/platform';
import { startRunner } from './service';

async function main(): Promise<void> {
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  const tracing = setupTracing('sandbox-runner');
  const runner = await startRunner(loadConfig());
  // On SIGTERM/SIGINT: stop (RUNNER_ON_SHUTDOWN says what becomes of the commands), flush the last spans, exit.
  stopOnSignals({
    stop: () => runner.stop(),
    tracing,
    log: (e, msg) => process.stderr.write(`sandbox-runner: ${'err' in e ? `${msg}: ${String(e.err)}` : `${e.signal}, ${msg}`}\n`),
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`sandbox-runner failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
