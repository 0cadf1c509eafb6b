import { status as GrpcStatus, type Metadata, type ServiceError, type UntypedHandleCall } from '@grpc/grpc-js';
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { RunnerService, type RunnerServer } from '@handplane/proto';
import { extractGrpcMetadata, SERVICE_ATTR, tracerFor, type ServiceMetrics } from '@handplane/platform';
import { Histogram } from 'prom-client';

type Handler = (call: { metadata: Metadata; once(ev: string, f: () => void): unknown }, callback?: (err: ServiceError | null, ...rest: unknown[]) => void) => void;

const codeName = (code: number | undefined): string => (code === undefined ? 'OK' : (GrpcStatus[code] ?? String(code)));

/**
 * Wraps every Runner handler in a SERVER span whose parent is the caller's trace context (gRPC
 * metadata), and times it in `handplane_runner_grpc_duration_seconds{method, code}`. A streaming
 * call (ReadLog) is timed until its stream closes.
 */
export function instrumentRunner(impl: RunnerServer, metrics?: ServiceMetrics): RunnerServer {
  const service = metrics?.service ?? 'sandbox-runner';
  const tracer = tracerFor(service);
  const duration = metrics
    ? new Histogram({
        name: 'handplane_runner_grpc_duration_seconds',
        help: 'Runner gRPC handling time by method and status code (Exec is the spawn latency; ReadLog lasts as long as the stream)',
        labelNames: ['method', 'code'],
        buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 300],
        registers: [metrics.registry],
      })
    : undefined;
  const out: Record<string, UntypedHandleCall> = {};
  for (const [key, handler] of Object.entries(impl) as [keyof typeof RunnerService, Handler][]) {
    const def = RunnerService[key];
    const method = def.path.split('/').pop() ?? String(key);
    const wrapped: Handler = (call, callback) => {
      const started = performance.now();
      const parent = extractGrpcMetadata(call.metadata, ROOT_CONTEXT);
      const span = tracer.startSpan(`grpc serve Runner/${method}`, { kind: SpanKind.SERVER, attributes: { [SERVICE_ATTR]: service, 'rpc.system': 'grpc', 'rpc.method': method } }, parent);
      let ended = false;
      const end = (code: number | undefined) => {
        if (ended) return;
        ended = true;
        if (code !== undefined && code !== GrpcStatus.OK) span.setStatus({ code: SpanStatusCode.ERROR, message: codeName(code) });
        span.setAttribute('rpc.grpc.status_code', code ?? GrpcStatus.OK);
        span.end();
        duration?.observe({ method, code: codeName(code) }, (performance.now() - started) / 1000);
      };
      const ctx = trace.setSpan(parent, span);
      if (def.responseStream) {
        call.once('finish', () => end(GrpcStatus.OK));
        call.once('error', () => end(GrpcStatus.UNKNOWN));
        call.once('cancelled', () => end(GrpcStatus.CANCELLED));
        call.once('close', () => end(GrpcStatus.OK));
        context.with(ctx, () => handler(call));
        return;
      }
      context.with(ctx, () =>
        handler(call, (err, ...rest) => {
          end(err ? (err.code ?? GrpcStatus.UNKNOWN) : undefined);
          callback!(err, ...rest);
        }),
      );
    };
    out[key] = wrapped as unknown as UntypedHandleCall;
  }
  return out as unknown as RunnerServer;
}
