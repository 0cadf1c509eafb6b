import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { setupTracing } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { startTelemetryStack, type TelemetryStack } from './telemetry-stack';

// The process's tracer provider, installed before any service starts; every service in this
// process exports into it (each names itself in the `hp.service` attribute).
const exporter = new InMemorySpanExporter();
setupTracing('telemetry-test', {}, exporter);

type Want = { name: string | RegExp; kind: SpanKind; service?: string };

/**
 * One command through the real gateway, coordinator, runner, ingestor and runtime (in-process):
 * its spans form one trace, from the gateway's HTTP span over the NATS RPC, the TASKS events, the
 * gRPC calls to the runner and the ingestor's reads and commits, to the consumers of the results.
 */
describe('one trace follows a command through every service', () => {
  let s: TelemetryStack;
  let conv: string;
  beforeAll(async () => {
    // A short window, so a sleeping command goes to the background (the cutover's span).
    s = await startTelemetryStack('trace', { FOREGROUND_WINDOW_MS: '1500' });
    conv = (await s.api('POST', '/v1/conversations', { title: 'traced' })).json.id;
  });
  afterAll(() => s?.stop());

  const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((x) => x.spanContext().traceId === traceId);
  const matches = (x: ReadableSpan, w: Want) =>
    (typeof w.name === 'string' ? x.name === w.name : w.name.test(x.name)) && x.kind === w.kind && (w.service === undefined || x.attributes['hp.service'] === w.service);
  const describeSpans = (spans: ReadableSpan[]) => spans.map((x) => `${x.attributes['hp.service']} ${x.name} ${x.spanContext().spanId}<-${x.parentSpanContext?.spanId ?? '-'}`).join('\n');

  /** The one finished span of `traceId` that is a direct child of `parent` and matches `w` (waits for it). */
  async function child(parent: ReadableSpan, w: Want): Promise<ReadableSpan> {
    const traceId = parent.spanContext().traceId;
    const found = () => spansOf(traceId).filter((x) => x.parentSpanContext?.spanId === parent.spanContext().spanId && matches(x, w));
    try {
      await waitFor(async () => found().length > 0, 30_000, `${String(w.name)} under ${parent.name}`);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nspans of the trace:\n${describeSpans(spansOf(traceId))}`);
    }
    return found()[0]!;
  }

  it('links gateway → coordinator RPC → TASKS → runner Exec → ingestor ReadLog/commit → results, with correct parents', async () => {
    exporter.reset();
    const r = await s.api('POST', `/v1/conversations/${conv}/commands`, { command: 'echo hello' });
    expect(r.status).toBe(201);
    await waitFor(async () => (await s.api('GET', `/v1/tasks/${r.json.taskId}`)).json?.status === 'succeeded', 60_000, 'task succeeded');

    const http = exporter.getFinishedSpans().find((x) => x.name === 'POST /v1/conversations/:id/commands')!;
    expect(http).toBeDefined();
    expect(http.kind).toBe(SpanKind.SERVER);
    expect(http.attributes).toMatchObject({ 'hp.service': 'gateway', 'http.response.status_code': 201, 'http.route': '/v1/conversations/:id/commands' });
    expect(http.parentSpanContext).toBeUndefined(); // the root: the client sent no traceparent

    const startTask = /^rpc (call|serve) .*rpc\.coordinator\.start-task$/;
    const call = await child(http, { name: startTask, kind: SpanKind.CLIENT, service: 'gateway' });
    const serve = await child(call, { name: startTask, kind: SpanKind.SERVER, service: 'task-coordinator' });
    const registered = await child(serve, { name: 'publish TaskRegistered', kind: SpanKind.PRODUCER, service: 'task-coordinator' });
    const dispatch = await child(registered, { name: /^consume .*coordinator-tasks$/, kind: SpanKind.CONSUMER, service: 'task-coordinator' });
    // The read models take the event in the same trace.
    await child(registered, { name: 'project tasks', kind: SpanKind.CONSUMER, service: 'task-coordinator' });
    const exec = await child(dispatch, { name: 'grpc Runner/Exec', kind: SpanKind.CLIENT, service: 'task-coordinator' });
    const execServer = await child(exec, { name: 'grpc serve Runner/Exec', kind: SpanKind.SERVER, service: 'sandbox-runner' });
    expect(execServer.attributes['rpc.grpc.status_code']).toBe(0);
    const started = await child(dispatch, { name: 'publish TaskStarted', kind: SpanKind.PRODUCER, service: 'task-coordinator' });

    const follow = await child(started, { name: /^consume .*ingestor-tasks$/, kind: SpanKind.CONSUMER, service: 'log-ingestor' });
    const ingest = await child(follow, { name: 'ingest command', kind: SpanKind.INTERNAL, service: 'log-ingestor' });
    const readLog = await child(ingest, { name: 'grpc Runner/ReadLog', kind: SpanKind.CLIENT, service: 'log-ingestor' });
    await child(readLog, { name: 'grpc serve Runner/ReadLog', kind: SpanKind.SERVER, service: 'sandbox-runner' });
    await child(ingest, { name: 'ingest commit', kind: SpanKind.INTERNAL, service: 'log-ingestor' });
    await child(ingest, { name: 'publish CommandExited', kind: SpanKind.PRODUCER, service: 'log-ingestor' });
    const readable = await child(ingest, { name: 'publish CommandResultReadable', kind: SpanKind.PRODUCER, service: 'log-ingestor' });

    const settle = await child(readable, { name: /^consume .*coordinator-commands$/, kind: SpanKind.CONSUMER, service: 'task-coordinator' });
    const finished = await child(settle, { name: 'publish TaskFinished', kind: SpanKind.PRODUCER, service: 'task-coordinator' });
    const notice = await child(finished, { name: /^consume .*coordinator-notices$/, kind: SpanKind.CONSUMER, service: 'task-coordinator' });
    const convNotice = await child(notice, { name: /^publish task\./, kind: SpanKind.PRODUCER, service: 'task-coordinator' });
    await child(convNotice, { name: /^consume .*runtime-conv$/, kind: SpanKind.CONSUMER, service: 'agent-runtime' });

    // One trace: every service of the path is in it, and no span of it hangs off an unknown parent.
    const all = spansOf(http.spanContext().traceId);
    expect(new Set(all.map((x) => x.attributes['hp.service']))).toEqual(new Set(['gateway', 'task-coordinator', 'sandbox-runner', 'log-ingestor', 'agent-runtime']));
    const ids = new Set(all.map((x) => x.spanContext().spanId));
    const orphans = all.filter((x) => x !== http && !ids.has(x.parentSpanContext?.spanId ?? ''));
    expect(describeSpans(orphans)).toBe('');
  });

  it('the coordinator’s later actions on a task (foreground cutover, deadline stop) are in the task’s trace', async () => {
    exporter.reset();
    const r = await s.api('POST', `/v1/conversations/${conv}/commands`, { command: 'sleep 30', timeoutMs: 4000 });
    expect(r.status).toBe(201);
    await waitFor(async () => ['timed_out', 'cancelled'].includes((await s.api('GET', `/v1/tasks/${r.json.taskId}`)).json?.status), 60_000, 'the deadline to stop the task');
    const http = exporter.getFinishedSpans().find((x) => x.name === 'POST /v1/conversations/:id/commands')!;
    const traceId = http.spanContext().traceId;
    const named = (name: string) => {
      const found = spansOf(traceId).filter((x) => x.name === name && x.attributes['hp.service'] === 'task-coordinator');
      expect({ name, found: found.length }).toEqual({ name, found: 1 });
      return found[0]!;
    };
    await waitFor(async () => spansOf(traceId).some((x) => x.name === 'deadline stop'), 30_000, 'the deadline stop in the trace');
    const cutover = named('foreground cutover');
    expect(cutover.attributes['hp.task.id']).toBe(r.json.taskId);
    // Its parent is the registration's span, carried by the read model from TaskRegistered's header.
    const registered = spansOf(traceId).find((x) => x.name === 'publish TaskRegistered')!;
    expect(cutover.parentSpanContext?.spanId).toBe(registered.spanContext().spanId);
    await child(cutover, { name: 'publish TaskBackgrounded', kind: SpanKind.PRODUCER, service: 'task-coordinator' });
    const stop = named('deadline stop');
    expect(stop.parentSpanContext?.spanId).toBe(registered.spanContext().spanId);
    await child(stop, { name: /^publish TaskStopRequested/, kind: SpanKind.PRODUCER, service: 'task-coordinator' });
  }, 90_000);

  it('continues a trace the HTTP client started (W3C traceparent header)', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await s.api('POST', `/v1/conversations/${conv}/commands`, { command: 'true' }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(r.status).toBe(201);
    await waitFor(async () => spansOf(traceId).some((x) => x.name === 'grpc serve Runner/Exec'), 30_000, 'runner span in the client trace');
    const http = spansOf(traceId).find((x) => x.name === 'POST /v1/conversations/:id/commands')!;
    expect(http.parentSpanContext).toMatchObject({ traceId, spanId: '00f067aa0ba902b7', isRemote: true });
  });
});
