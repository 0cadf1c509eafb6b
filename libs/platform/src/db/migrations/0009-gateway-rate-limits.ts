import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Token buckets of the gateway's per-user rate limit, shared by every gateway replica (one row per
 * tenant and user; `tokens` refills with time, taken in one atomic statement per request).
 * Unlogged: after a Postgres crash the buckets start full again, which is the safe direction.
 */
export class GatewayRateLimits1764450000900 implements MigrationInterface {
  name = 'GatewayRateLimits1764450000900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE UNLOGGED TABLE rate_buckets (
      key text PRIMARY KEY,
      tokens double precision NOT NULL,
      at timestamptz NOT NULL,
      granted boolean NOT NULL
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS rate_buckets`);
  }
}
