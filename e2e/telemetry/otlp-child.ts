// Run as a child process (`node -r ./scripts/ts-register.js`): the OTLP exporter loads node:http with
// a dynamic import, which Jest's VM cannot run. Exports one span to the endpoint in the environment.
import { SpanKind } from '@opentelemetry/api';
import { inSpan, setupTracing } from '../../libs/platform/src/telemetry/tracing';

async function main(): Promise<void> {
  const tracing = setupTracing('otlp-child');
  await inSpan('otlp-child', 'probe-span', { kind: SpanKind.SERVER }, async () => undefined);
  await tracing.shutdown(); // flushes the batch
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
