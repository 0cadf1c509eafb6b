import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** Attribute naming the Handplane service that made a span (several services may share a process in tests). */
export const SERVICE_ATTR = 'hp.service';

/** What `setupTracing` installed; `shutdown` flushes the exporter. */
export interface Tracing {
  readonly enabled: boolean;
  shutdown(): Promise<void>;
}

const noTracing: Tracing = { enabled: false, shutdown: async () => undefined };
let installed: Tracing | undefined;

/**
 * Installs the process's tracer provider from the environment:
 * `OTEL_TRACES_EXPORTER` = `none` (default unless an endpoint is set) | `otlp` | `console`,
 * `OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP/HTTP base URL; setting it alone selects `otlp`),
 * `OTEL_SERVICE_NAME` (default `serviceName`). With `none` nothing is registered: the API stays
 * no-op and every span helper costs one function call. A test passes its own `exporter`
 * (an `InMemorySpanExporter`), exported synchronously. Only the first call in a process installs.
 */
export function setupTracing(serviceName: string, env: Record<string, string | undefined> = process.env, exporter?: SpanExporter): Tracing {
  if (installed) return installed;
  // An empty variable counts as unset (compose files often pass `OTEL_TRACES_EXPORTER=`).
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const kind = exporter ? 'custom' : (env.OTEL_TRACES_EXPORTER?.trim() || (endpoint ? 'otlp' : 'none')).toLowerCase();
  if (kind === 'none') return (installed = noTracing);
  let processor;
  if (exporter) processor = new SimpleSpanProcessor(exporter);
  else if (kind === 'console') processor = new SimpleSpanProcessor(new ConsoleSpanExporter());
  else if (kind === 'otlp') processor = new BatchSpanProcessor(new OTLPTraceExporter(otlpOptions(env)), { scheduledDelayMillis: 1000 });
  else throw new Error(`OTEL_TRACES_EXPORTER must be none, otlp or console (got ${kind})`);
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: env.OTEL_SERVICE_NAME || serviceName }),
    spanProcessors: [processor],
  });
  provider.register({ contextManager: new AsyncLocalStorageContextManager(), propagator: new W3CTraceContextPropagator() });
  installed = { enabled: true, shutdown: () => provider.shutdown() };
  return installed;
}

/** The OTLP/HTTP exporter options: the traces path is appended to the base endpoint, as the spec says. */
function otlpOptions(env: Record<string, string | undefined>): { url?: string } {
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (specific) return { url: specific };
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return base ? { url: `${base.replace(/\/+$/, '')}/v1/traces` } : {};
}

/** The tracer of one service. */
export function tracerFor(service: string): Tracer {
  return trace.getTracer(`handplane.${service}`);
}

/**
 * Runs `fn` inside a new span (child of `parent`, default the active context), ending it when `fn`
 * settles and recording a thrown error. The span is active inside `fn`, so NATS publishes and gRPC
 * calls made there carry it.
 */
export async function inSpan<T>(
  service: string,
  name: string,
  opts: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracerFor(service).startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: { [SERVICE_ATTR]: service, ...opts.attributes } }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (e) {
    failSpan(span, e);
    throw e;
  } finally {
    span.end();
  }
}

/** Marks a span failed with the error's class and message (never request data). */
export function failSpan(span: Span, e: unknown): void {
  span.recordException(e instanceof Error ? e : String(e));
  span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
}

/** The active trace context as a W3C `traceparent`, or undefined when no trace is active. */
export function currentTraceparent(ctx: Context = context.active()): string | undefined {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent;
}

/** A context whose remote parent is the given `traceparent` (the active context when absent or invalid). */
export function contextFromTraceparent(traceparent: string | undefined, base: Context = context.active()): Context {
  if (!traceparent) return base;
  return propagation.extract(base, { traceparent });
}

export { SpanKind };
