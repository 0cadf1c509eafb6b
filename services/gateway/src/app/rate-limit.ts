import type { Pool } from 'pg';
import { DomainError } from '@handplane/kernel';
import { guardDb } from './db';
import type { Principal } from './resources';

/** Too many requests from one user: HTTP 429 with `Retry-After`. */
export class RateLimited extends DomainError {
  readonly code = 'rate_limited' as const;
  override readonly retryable = true;
  constructor(readonly retryAfterSeconds: number) {
    super(`too many requests; retry in ${retryAfterSeconds} s`);
  }
}

/** Takes one request from the caller's budget or throws RateLimited. */
export interface RateLimiter {
  take(p: Principal): void | Promise<void>;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per (tenant, user): `burst` requests at once, refilled at `perMinute`, kept in
 * memory by one gateway instance (`RATE_LIMIT_SHARED=false`): N replicas then allow up to N times
 * the rate. `perMinute: 0` turns it off.
 */
export function tokenBucketLimiter(opts: { perMinute: number; burst: number; nowMs: () => number; maxKeys?: number }): RateLimiter {
  if (opts.perMinute <= 0) return { take: () => undefined };
  const perMs = opts.perMinute / 60_000;
  const maxKeys = opts.maxKeys ?? 100_000;
  const buckets = new Map<string, Bucket>();

  // A full bucket carries no state worth keeping: drop those when the map grows.
  const prune = (now: number) => {
    for (const [k, b] of buckets) if (b.tokens + (now - b.at) * perMs >= opts.burst) buckets.delete(k);
  };

  return {
    take(p) {
      const now = opts.nowMs();
      const key = `${p.tenant}\0${p.userId}`;
      const b = buckets.get(key) ?? { tokens: opts.burst, at: now };
      b.tokens = Math.min(opts.burst, b.tokens + (now - b.at) * perMs);
      b.at = now;
      if (b.tokens < 1) {
        buckets.set(key, b);
        throw new RateLimited(Math.max(1, Math.ceil((1 - b.tokens) / perMs / 1000)));
      }
      b.tokens -= 1;
      buckets.set(key, b);
      if (buckets.size > maxKeys) prune(now);
    },
  };
}

/**
 * The same token bucket, shared by every gateway replica: one row per (tenant, user) in
 * `rate_buckets`, refilled and taken in a single atomic statement (the row lock orders concurrent
 * requests of one user across replicas), timed by the database clock so replicas agree.
 */
export function postgresLimiter(opts: { perMinute: number; burst: number; pool: Pool }): RateLimiter {
  if (opts.perMinute <= 0) return { take: () => undefined };
  const perSecond = opts.perMinute / 60;
  return {
    async take(p) {
      const key = JSON.stringify([p.tenant, p.userId]); // text: no NUL bytes
      const r = await guardDb(() =>
        opts.pool.query<{ tokens: number; granted: boolean }>(
          // One statement: under concurrent requests the row lock makes each see the previous one's result.
          `INSERT INTO rate_buckets AS b (key, tokens, at, granted) VALUES ($1, $2::float8 - 1, clock_timestamp(), true)
           ON CONFLICT (key) DO UPDATE SET
             granted = LEAST($2::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM (clock_timestamp() - b.at))) * $3::float8) >= 1,
             tokens = LEAST($2::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM (clock_timestamp() - b.at))) * $3::float8)
                      - CASE WHEN LEAST($2::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM (clock_timestamp() - b.at))) * $3::float8) >= 1 THEN 1 ELSE 0 END,
             at = clock_timestamp()
           RETURNING b.tokens, b.granted`,
          [key, opts.burst, perSecond],
        ),
      );
      const row = r.rows[0]!;
      if (!row.granted) throw new RateLimited(Math.max(1, Math.ceil((1 - Number(row.tokens)) / perSecond)));
    },
  };
}
