import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { z } from 'zod';
import { isDomainError, Unavailable, ValidationError } from '@handplane/kernel';
import type { Logger } from '../logger';

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
      void (async () => {
        let reply: unknown;
        try {
          const parsed = schema.safeParse(JSON.parse(Buffer.from(msg.data).toString('utf8')));
          if (!parsed.success) throw new ValidationError('invalid request', parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
          reply = await handler(parsed.data);
        } catch (e) {
          if (!isDomainError(e)) logger.error({ err: e, subject }, 'rpc handler failed');
          reply = rpcError(e);
        }
        msg.respond(enc(reply));
      })();
    },
  });
}

/** Sends a request and parses the reply; no responder or a timeout is `Unavailable`. */
export async function callRpc<S extends z.ZodTypeAny>(nc: NatsConnection, subject: string, body: unknown, replySchema: S, timeoutMs = 15_000): Promise<z.infer<S>> {
  let data: Uint8Array;
  try {
    const m = await nc.request(subject, enc(body), { timeout: timeoutMs });
    data = m.data;
  } catch (cause) {
    throw new Unavailable(`${subject} did not answer`, { cause });
  }
  const parsed = replySchema.safeParse(JSON.parse(Buffer.from(data).toString('utf8')));
  if (!parsed.success) throw new Unavailable(`${subject} answered something unexpected`);
  return parsed.data;
}
