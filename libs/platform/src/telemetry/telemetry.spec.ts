import { Metadata } from '@grpc/grpc-js';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { context, ROOT_CONTEXT, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ServiceMetrics } from './metrics';
import { extractGrpcMetadata, extractNatsHeaders, injectNatsHeaders, traceMetadata } from './propagation';
import { contextFromTraceparent, currentTraceparent, inSpan, setupTracing } from './tracing';

const exporter = new InMemorySpanExporter();
// One provider per test file (Jest gives each file its own globals).
setupTracing('unit', {}, exporter);

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

describe('trace context propagation', () => {
  beforeEach(() => exporter.reset());

  it('injects the active span into NATS headers and a consumer span extracted from them is its child', async () => {
    let sent: ReturnType<typeof natsHeaders> | undefined;
    await inSpan('producer', 'publish', {}, async (span) => {
      sent = injectNatsHeaders(natsHeaders());
      const [, traceId, spanId] = TRACEPARENT.exec(sent.get('traceparent'))!;
      expect(traceId).toBe(span.spanContext().traceId);
      expect(spanId).toBe(span.spanContext().spanId);
    });
    await inSpan('consumer', 'consume', { parent: extractNatsHeaders(sent, ROOT_CONTEXT) }, async () => undefined);
    const [publish, consume] = exporter.getFinishedSpans();
    expect(consume!.spanContext().traceId).toBe(publish!.spanContext().traceId);
    expect(consume!.parentSpanContext?.spanId).toBe(publish!.spanContext().spanId);
  });

  it('injects nothing when no trace is active, and extraction of no headers gives a root', async () => {
    const h = injectNatsHeaders(natsHeaders(), ROOT_CONTEXT);
    expect(h.has('traceparent')).toBe(false);
    expect(trace.getSpanContext(extractNatsHeaders(undefined, ROOT_CONTEXT))).toBeUndefined();
    expect(currentTraceparent(ROOT_CONTEXT)).toBeUndefined();
  });

  it('carries the trace through gRPC metadata', async () => {
    let md: Metadata | undefined;
    await inSpan('client', 'grpc call', {}, async () => {
      md = traceMetadata();
    });
    expect(md!.get('traceparent')[0]).toMatch(TRACEPARENT);
    const parent = trace.getSpanContext(extractGrpcMetadata(md, ROOT_CONTEXT))!;
    const client = exporter.getFinishedSpans()[0]!;
    expect(parent).toMatchObject({ traceId: client.spanContext().traceId, spanId: client.spanContext().spanId, isRemote: true });
  });

  it('round-trips a traceparent string and ignores a malformed one', () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    expect(currentTraceparent(contextFromTraceparent(tp, ROOT_CONTEXT))).toBe(tp);
    expect(trace.getSpanContext(contextFromTraceparent('not-a-traceparent', ROOT_CONTEXT))).toBeUndefined();
    expect(trace.getSpanContext(extractGrpcMetadata(new Metadata(), ROOT_CONTEXT))).toBeUndefined();
  });

  it('a failing callback marks its span as an error and rethrows', async () => {
    await expect(inSpan('svc', 'boom', {}, async () => Promise.reject(new Error('nope')))).rejects.toThrow('nope');
    const [span] = exporter.getFinishedSpans();
    expect(span!.status).toMatchObject({ code: 2, message: 'nope' });
    expect(span!.attributes['hp.service']).toBe('svc');
    expect(trace.getSpan(context.active())).toBeUndefined();
  });
});

describe('ServiceMetrics', () => {
  it('reads gauges at scrape time and counts a failing read instead of failing the scrape', async () => {
    const m = new ServiceMetrics('unit-svc', { defaultMetrics: false });
    let n = 3;
    m.gauge('hp_test_things', 'things', ['kind'], async () => [{ labels: { kind: 'a' }, value: n }]);
    m.gauge('hp_test_broken', 'broken', [], async () => Promise.reject(new Error('db down')));
    m.counterFrom('hp_test_done_total', 'done', () => n * 2);
    const first = await m.scrape();
    const { contentType } = first;
    let { body } = first;
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(body).toContain('hp_test_things{kind="a",service="unit-svc"} 3');
    expect(body).toContain('hp_test_done_total{service="unit-svc"} 6');
    expect(body).toContain('handplane_metrics_collect_errors_total{metric="hp_test_broken",service="unit-svc"} 1');
    expect(body).toMatch(/hp_test_broken{service="unit-svc"} nan\n/i); // unknown, not 0
    n = 5;
    ({ body } = await m.scrape());
    expect(body).toContain('hp_test_things{kind="a",service="unit-svc"} 5');
    expect(body).toContain('hp_test_done_total{service="unit-svc"} 10');
  });
});
