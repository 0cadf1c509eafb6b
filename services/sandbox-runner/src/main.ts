import { loadConfig } from '@handplane/contracts';
import { setupTracing } from '@handplane/platform';
import { startRunner } from './service';

async function main(): Promise<void> {
  // Before anything traced starts; OTEL_TRACES_EXPORTER / OTEL_EXPORTER_OTLP_ENDPOINT choose the exporter.
  setupTracing('sandbox-runner');
  const runner = await startRunner(loadConfig());
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`sandbox-runner: ${signal}, stopping\n`);
    runner.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`sandbox-runner: stop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`sandbox-runner failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
