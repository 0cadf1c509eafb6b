import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import type { Pool } from 'pg';
import { z } from 'zod';
import { projectionRebuildSubject } from '@handplane/contracts';
import type { Logger } from '../logger';
import type { Nats } from '../nats/connect';
import { rpcError } from '../nats/rpc';
import { rebuildProjection } from './projection-rebuild';
import type { Projection } from './projector';

const enc = (v: unknown) => Buffer.from(JSON.stringify(v));
const requestSchema = z.object({ at: z.string().max(40), nonce: z.string().regex(/^[0-9a-f]{32}$/), sig: z.string().regex(/^[0-9a-f]{64}$/) }).strict();
export type RebuildRequest = z.infer<typeof requestSchema>;

/** How far a rebuild request's time may be from the host's clock, either way. */
export const REBUILD_REQUEST_MAX_SKEW_MS = 60_000;

const mac = (token: string, name: string, at: string, nonce: string) => createHmac('sha256', token).update(`projection-rebuild\n${name}\n${at}\n${nonce}`).digest('hex');

/**
 * A rebuild request for `name`, signed with the operator token (ADMIN_TOKEN, which the gateway and
 * every host of projections share): HMAC-SHA256 over the name, the time and a random nonce. The
 * token itself never travels.
 */
export function signRebuildRequest(token: string, name: string, now: Date = new Date()): RebuildRequest {
  const at = now.toISOString();
  const nonce = randomBytes(16).toString('hex');
  return { at, nonce, sig: mac(token, name, at, nonce) };
}

/**
 * Why a host refuses a rebuild request, or null when it is signed with `token` for `name`, made
 * within REBUILD_REQUEST_MAX_SKEW_MS of `now`, and not seen before (`seen`: nonces of that window).
 */
export function rebuildRefusal(token: string, name: string, raw: unknown, now: number, seen: Map<string, number>): string | null {
  if (!token) return 'projection rebuilds are off on this service: set ADMIN_TOKEN (the gateway\'s) here too';
  const r = requestSchema.safeParse(raw);
  if (!r.success) return 'a rebuild request must be signed with the operator token (at, nonce, sig)';
  const { at, nonce, sig } = r.data;
  const t = Date.parse(at);
  if (!Number.isFinite(t) || Math.abs(now - t) > REBUILD_REQUEST_MAX_SKEW_MS) return `the rebuild request is not from the last ${REBUILD_REQUEST_MAX_SKEW_MS / 1000} s`;
  if (!timingSafeEqual(Buffer.from(sig, 'hex'), Buffer.from(mac(token, name, at, nonce), 'hex'))) return 'the rebuild request is not signed with the operator token';
  for (const [n, until] of seen) if (until < now) seen.delete(n);
  if (seen.has(nonce)) return 'the rebuild request was already used';
  seen.set(nonce, now + 2 * REBUILD_REQUEST_MAX_SKEW_MS);
  return null;
}

export interface ServedRebuilds {
  /** Stops answering and interrupts running rebuilds between batches (they resume on the next run). */
  stop(): Promise<void>;
}

/**
 * Answers `rpc.projections.rebuild.<name>` for the projections this service hosts: the reply comes
 * as soon as the rebuild holds its lock (`{ok: true, status: 'running'}`) or was refused (a rebuild
 * already runs: `conflict`); the rebuild goes on in the background, its progress in
 * `projection_rebuilds`. Only requests signed with `adminToken` (`signRebuildRequest`) are served:
 * anything else on the internal NATS is refused with `forbidden`, and without a token rebuilds are off.
 */
export function serveProjectionRebuilds(nats: Nats, pool: Pool, prefix: string, projections: readonly Projection[], logger: Logger, adminToken: string): ServedRebuilds {
  const abort = new AbortController();
  const seen = new Map<string, number>();
  const running = new Set<Promise<unknown>>();
  const subs: Subscription[] = projections.map((p) =>
    nats.nc.subscribe(projectionRebuildSubject(prefix, p.name), {
      queue: `projections-${p.name}`,
      callback: (err, msg) => {
        if (err) return logger.error({ err, projection: p.name }, 'projection rebuild subscription error');
        let raw: unknown;
        try {
          raw = JSON.parse(Buffer.from(msg.data).toString('utf8') || '{}');
        } catch {
          msg.respond(enc({ ok: false, error: { code: 'validation', message: 'invalid request: not JSON' } }));
          return;
        }
        const refused = rebuildRefusal(adminToken, p.name, raw, Date.now(), seen);
        if (refused) {
          logger.warn({ projection: p.name, reason: refused }, 'projection rebuild request refused');
          msg.respond(enc({ ok: false, error: { code: 'forbidden', message: refused } }));
          return;
        }
        let answered = false;
        const run = rebuildProjection(nats, pool, p, {
          logger,
          signal: abort.signal,
          onLocked: () => {
            answered = true;
            msg.respond(enc({ ok: true, name: p.name, status: 'running' }));
          },
        }).catch((e) => {
          if (!answered) msg.respond(enc(rpcError(e)));
          else logger.error({ err: e, projection: p.name }, 'projection rebuild failed');
        });
        running.add(run);
        void run.finally(() => running.delete(run));
      },
    }),
  );
  return {
    async stop() {
      for (const s of subs) s.unsubscribe();
      abort.abort();
      await Promise.allSettled([...running]);
    },
  };
}
