import type { Pool } from 'pg';
import type { Nats } from './nats/connect';
import type { RunnerRegistry } from './nats/runner-registry';
import type { ReadinessCheck } from './http/health';

/** NATS answers a round trip and JetStream answers its account info. */
export function natsCheck(nats: Nats): ReadinessCheck {
  return {
    name: 'nats',
    async check() {
      if (nats.nc.isClosed()) throw new Error('connection closed');
      await nats.nc.flush();
      await nats.jsm.getAccountInfo();
    },
  };
}

/** Postgres answers a query. */
export function postgresCheck(pool: Pool): ReadinessCheck {
  return {
    name: 'postgres',
    async check() {
      await pool.query('SELECT 1');
    },
  };
}

/** At least one runner heart-beat recently. */
export function runnerCheck(registry: RunnerRegistry, lostAfterMs: number): ReadinessCheck {
  return {
    name: 'runner',
    async check() {
      const live = await registry.live(new Date(), lostAfterMs);
      if (live.length === 0) throw new Error('no live runner in the registry');
    },
  };
}
