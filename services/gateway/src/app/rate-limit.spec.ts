import { RateLimited, tokenBucketLimiter } from './rate-limit';

describe('per-user token bucket', () => {
  const alice = { userId: 'alice', tenant: 'acme' };
  const takes = (l: ReturnType<typeof tokenBucketLimiter>, n: number) => {
    const out: (number | 'ok')[] = [];
    for (let i = 0; i < n; i++) {
      try {
        l.take(alice);
        out.push('ok');
      } catch (e) {
        out.push((e as RateLimited).retryAfterSeconds);
      }
    }
    return out;
  };

  it('allows a burst, then the per-minute rate, and says when to retry', () => {
    let now = 0;
    const l = tokenBucketLimiter({ perMinute: 60, burst: 3, nowMs: () => now });
    expect(takes(l, 4)).toEqual(['ok', 'ok', 'ok', 1]);
    now += 500;
    expect(takes(l, 1)).toEqual([1]); // half a token: retry in a second
    now += 500;
    expect(takes(l, 2)).toEqual(['ok', 1]);
    now += 60_000;
    expect(takes(l, 4)).toEqual(['ok', 'ok', 'ok', 1]); // refilled to the burst, never beyond
  });

  it('keeps users and tenants apart, forgets full buckets, and can be turned off', () => {
    let now = 0;
    const l = tokenBucketLimiter({ perMinute: 6, burst: 1, nowMs: () => now, maxKeys: 2 });
    l.take(alice);
    expect(() => l.take(alice)).toThrow(RateLimited);
    expect(() => l.take({ userId: 'alice', tenant: 'other' })).not.toThrow();
    expect(() => l.take({ userId: 'bob', tenant: 'acme' })).not.toThrow();
    now += 10_000;
    expect(() => l.take(alice)).not.toThrow();
    const off = tokenBucketLimiter({ perMinute: 0, burst: 1, nowMs: () => now });
    for (let i = 0; i < 1000; i++) off.take(alice);
  });
});
