// Run as a child process (`node -r ./scripts/ts-register.js`): the OTLP exporter loads node:http with
// a dynamic import, which Jest's VM cannot run. Exports spans to the endpoint in the environment.
// OTLP_CHILD=signal: a span ends, the process sends itself SIGTERM, and a service's shutdown
// (`stopOnSignals`, as every service's main) stops — with a span of its own — and must flush both.
import { SpanKind } from '@opentelemetry/api';
import { stopOnSignals } from '../../libs/platform/src/telemetry/shutdown';
import { inSpan, setupTracing } from '../../libs/platform/src/telemetry/tracing';

async function main(): Promise<void> {
  const tracing = setupTracing('otlp-child');
  await inSpan('otlp-child', 'probe-span', { kind: SpanKind.SERVER }, async () => undefined);
  if (process.env.OTLP_CHILD !== 'signal') return tracing.shutdown(); // flushes the batch
  setInterval(() => undefined, 1000); // alive until the shutdown exits
  stopOnSignals({
    stop: () => inSpan('otlp-child', 'stop-span', {}, async () => undefined),
    tracing,
    log: () => undefined,
    flushTimeoutMs: Number(process.env.FLUSH_TIMEOUT_MS ?? 5000),
  });
  process.kill(process.pid, 'SIGTERM');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
