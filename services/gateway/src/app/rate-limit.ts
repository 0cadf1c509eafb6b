import { DomainError } from '@handplane/kernel';
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
  take(p: Principal): void;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per (tenant, user): `burst` requests at once, refilled at `perMinute`. Kept in
 * memory per gateway instance, so N replicas allow up to N times the rate: a limit against
 * runaway clients, not a quota. `perMinute: 0` turns it off.
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
