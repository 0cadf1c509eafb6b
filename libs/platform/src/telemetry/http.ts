import { timingSafeEqual } from 'node:crypto';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { NextFunction, Request, Response } from 'express';
import type { ServiceMetrics } from './metrics';
import { SERVICE_ATTR, tracerFor } from './tracing';

/** How `/metrics` is guarded: open (internal ports), a bearer token, or refused. */
export type MetricsAccess = { readonly kind: 'open' } | { readonly kind: 'token'; readonly token: string } | { readonly kind: 'disabled'; readonly reason: string };

/** Paths kept out of traces (probes would drown the traces that matter); still counted. */
const QUIET = new Set(['/healthz', '/readyz', '/metrics']);

/** The route template Express matched (never the raw URL: it holds ids). */
function routeOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path === 'string') return `${req.baseUrl ?? ''}${path}`;
  return QUIET.has(req.path) ? req.path : 'unmatched';
}

/**
 * Express middleware: one SERVER span per request (child of an incoming `traceparent`), active while
 * the request is handled so RPCs and publishes join the trace; and the request counter and histogram.
 */
export function httpTelemetry(metrics: ServiceMetrics) {
  const tracer = tracerFor(metrics.service);
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = performance.now();
    const quiet = QUIET.has(req.path);
    const parent = propagation.extract(context.active(), req.headers);
    const span = quiet ? undefined : tracer.startSpan(`HTTP ${req.method}`, { kind: SpanKind.SERVER, attributes: { [SERVICE_ATTR]: metrics.service, 'http.request.method': req.method } }, parent);
    let done = false;
    // 'finish' when the answer was sent; 'close' alone when the client left first (an SSE stream).
    const settle = () => {
      if (done) return;
      done = true;
      const route = routeOf(req);
      const status = res.writableFinished ? String(res.statusCode) : 'aborted';
      metrics.httpRequests.inc({ method: req.method, route, status });
      metrics.httpDuration.observe({ method: req.method, route }, (performance.now() - started) / 1000);
      if (span) {
        span.updateName(`${req.method} ${route}`);
        span.setAttributes({ 'http.route': route, 'http.response.status_code': res.statusCode });
        if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    };
    res.once('finish', settle);
    res.once('close', settle);
    if (span) context.with(trace.setSpan(parent, span), next);
    else next();
  };
}

const equal = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** `GET /metrics`: the Prometheus text exposition, guarded by `access`. */
export function metricsHandler(metrics: ServiceMetrics, access: MetricsAccess) {
  return (req: Request, res: Response): void => {
    if (access.kind === 'disabled') {
      res.status(403).json({ error: { code: 'forbidden', message: access.reason } });
      return;
    }
    if (access.kind === 'token') {
      const header = req.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice(7) : '';
      if (!equal(given, access.token)) {
        res.status(401).setHeader('WWW-Authenticate', 'Bearer').json({ error: { code: 'unauthorized', message: 'metrics need the METRICS_TOKEN bearer token' } });
        return;
      }
    }
    metrics.scrape().then(
      ({ contentType, body }) => {
        // `end`, not Express's `send`: send rewrites the content type's parameters.
        res.writeHead(200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' }).end(body);
      },
      () => res.status(500).json({ error: { code: 'internal', message: 'metrics could not be collected' } }),
    );
  };
}
