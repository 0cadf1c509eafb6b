import { headers as natsHeaders, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import type { z } from 'zod';
import { isDomainError, Unavailable, ValidationError } from '@handplane/kernel';
import type { Logger } from '../logger';
import { telemetryOf } from '../telemetry/metrics';
import { extractNatsHeaders, injectNatsHeaders } from '../telemetry/propagation';
import { inSpan } from '../telemetry/tracing';

const enc = (v: unknown) => Buffer.from(JSON.stringify(v));

/** Maps any error to the `{ok:false, error}` reply shape (the NATS side of the error mapping). */
export function rpcError(e: unknown): { ok: false; error: { code: string; message: string } } {
  if (isDomainError(e)) return { ok: false, error: { code: e.code, message: e.message } };
  return { ok: false, error: { code: 'internal', message: 'internal error' } };
}

/**
 * Serves a request/reply subject in a queue group (replicas share requests). The request is parsed
 * with `schema`; the handler's value is sent back as the reply.
 */
export function serveRpc<S extends z.ZodTypeAny>(
  nc: NatsConnection,
  subject: string,
  queue: string,
  schema: S,
  handler: (req: z.infer<S>) => Promise<unknown>,
  logger: Logger,
): Subscription {
  return nc.subscribe(subject, {
    queue,
    callback: (err, msg) => {
      if (err) {
        logger.error({ err, subject }, 'rpc subscription error');
        return;
      }
      const metrics = telemetryOf(nc);
      const started = performance.now();
      // The handler runs in a SERVER span, child of the caller's span carried in the request headers.
      const serve = async (): Promise<unknown> => {
        try {
          const parsed = schema.safeParse(JSON.parse(Buffer.from(msg.data).toString('utf8')));
          if (!parsed.success) throw new ValidationError('invalid request', parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
          return await handler(parsed.data);
        } catch (e) {
          if (!isDomainError(e)) logger.error({ err: e, subject }, 'rpc handler failed');
          return rpcError(e);
        }
      };
      const traced = metrics
        ? inSpan(metrics.service, `rpc serve ${subject}`, { kind: SpanKind.SERVER, parent: extractNatsHeaders(msg.headers, ROOT_CONTEXT), attributes: { 'messaging.destination.name': subject } }, serve)
        : serve();
      void traced.then((reply) => {
        metrics?.rpcServed.inc({ subject, outcome: outcomeOf(reply) });
        metrics?.rpcDuration.observe({ subject, side: 'server' }, (performance.now() - started) / 1000);
        msg.respond(enc(reply));
      });
    },
  });
}

/** Sends a request and parses the reply; no responder or a timeout is `Unavailable`. */
export async function callRpc<S extends z.ZodTypeAny>(nc: NatsConnection, subject: string, body: unknown, replySchema: S, timeoutMs = 15_000): Promise<z.infer<S>> {
  const metrics = telemetryOf(nc);
  const call = async (): Promise<z.infer<S>> => {
    let data: Uint8Array;
    try {
      // The request carries the caller's trace context, so the server's span joins its trace.
      const m = await nc.request(subject, enc(body), { timeout: timeoutMs, headers: injectNatsHeaders(natsHeaders()) });
      data = m.data;
    } catch (cause) {
      metrics?.rpcCalled.inc({ subject, outcome: 'unavailable' });
      throw new Unavailable(`${subject} did not answer`, { cause });
    }
    const parsed = replySchema.safeParse(JSON.parse(Buffer.from(data).toString('utf8')));
    if (!parsed.success) throw new Unavailable(`${subject} answered something unexpected`);
    metrics?.rpcCalled.inc({ subject, outcome: outcomeOf(parsed.data) });
    return parsed.data;
  };
  if (!metrics) return call();
  const started = performance.now();
  try {
    return await inSpan(metrics.service, `rpc call ${subject}`, { kind: SpanKind.CLIENT, attributes: { 'messaging.destination.name': subject } }, call);
  } finally {
    metrics.rpcDuration.observe({ subject, side: 'client' }, (performance.now() - started) / 1000);
  }
}

/** `ok`, or the error code of an `{ok:false, error:{code}}` reply (a closed set: safe as a label). */
function outcomeOf(reply: unknown): string {
  const r = reply as { ok?: unknown; error?: { code?: unknown } } | null;
  if (r && r.ok === false) return typeof r.error?.code === 'string' ? r.error.code : 'error';
  return 'ok';
}
