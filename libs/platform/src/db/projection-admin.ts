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
const requestSchema = z.object({}).passthrough();

export interface ServedRebuilds {
  /** Stops answering and interrupts running rebuilds between batches (they resume on the next run). */
  stop(): Promise<void>;
}

/**
 * Answers `rpc.projections.rebuild.<name>` for the projections this service hosts: the reply comes
 * as soon as the rebuild holds its lock (`{ok: true, status: 'running'}`) or was refused (a rebuild
 * already runs: `conflict`); the rebuild goes on in the background, its progress in
 * `projection_rebuilds`.
 */
export function serveProjectionRebuilds(nats: Nats, pool: Pool, prefix: string, projections: readonly Projection[], logger: Logger): ServedRebuilds {
  const abort = new AbortController();
  const running = new Set<Promise<unknown>>();
  const subs: Subscription[] = projections.map((p) =>
    nats.nc.subscribe(projectionRebuildSubject(prefix, p.name), {
      queue: `projections-${p.name}`,
      callback: (err, msg) => {
        if (err) return logger.error({ err, projection: p.name }, 'projection rebuild subscription error');
        try {
          requestSchema.parse(JSON.parse(Buffer.from(msg.data).toString('utf8') || '{}'));
        } catch {
          msg.respond(enc({ ok: false, error: { code: 'validation', message: 'invalid request' } }));
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
