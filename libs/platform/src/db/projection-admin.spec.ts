import { REBUILD_REQUEST_MAX_SKEW_MS, rebuildRefusal, signRebuildRequest } from './projection-admin';

/** Rebuild requests on the internal NATS are served only when signed with the operator token. */
describe('projection rebuild requests: signed with ADMIN_TOKEN, fresh, used once', () => {
  const token = 'operator-secret';
  const now = Date.parse('2026-11-30T05:00:00.000Z');
  const fresh = () => signRebuildRequest(token, 'runs', new Date(now));

  it('serves a fresh request signed for this projection, once', () => {
    const seen = new Map<string, number>();
    const req = fresh();
    expect(rebuildRefusal(token, 'runs', req, now, seen)).toBeNull();
    expect(rebuildRefusal(token, 'runs', req, now + 1000, seen)).toBe('the rebuild request was already used');
    // Another request is another nonce.
    expect(rebuildRefusal(token, 'runs', fresh(), now, seen)).toBeNull();
  });

  it('refuses everything when this host has no token', () => {
    expect(rebuildRefusal('', 'runs', fresh(), now, new Map())).toMatch(/rebuilds are off on this service: set ADMIN_TOKEN/);
  });

  it('refuses unsigned, malformed, forged, misdirected and stale requests', () => {
    const seen = new Map<string, number>();
    for (const raw of [{}, null, 'x', { at: 'now', nonce: 'n', sig: 's' }, { ...fresh(), extra: 1 }]) {
      expect(rebuildRefusal(token, 'runs', raw, now, seen)).toMatch(/must be signed with the operator token/);
    }
    expect(rebuildRefusal(token, 'runs', signRebuildRequest('another-token', 'runs', new Date(now)), now, seen)).toMatch(/not signed with the operator token/);
    // Signed for another projection: not valid for this one.
    expect(rebuildRefusal(token, 'runs', signRebuildRequest(token, 'tasks', new Date(now)), now, seen)).toMatch(/not signed with the operator token/);
    const tampered = { ...fresh(), at: new Date(now + 1).toISOString() };
    expect(rebuildRefusal(token, 'runs', tampered, now, seen)).toMatch(/not signed with the operator token/);
    expect(rebuildRefusal(token, 'runs', signRebuildRequest(token, 'runs', new Date(now - REBUILD_REQUEST_MAX_SKEW_MS - 1)), now, seen)).toMatch(/not from the last 60 s/);
    expect(rebuildRefusal(token, 'runs', signRebuildRequest(token, 'runs', new Date(now + REBUILD_REQUEST_MAX_SKEW_MS + 1)), now, seen)).toMatch(/not from the last 60 s/);
  });

  it('forgets used nonces once they could not be fresh any more', () => {
    const seen = new Map<string, number>();
    expect(rebuildRefusal(token, 'runs', fresh(), now, seen)).toBeNull();
    expect(seen.size).toBe(1);
    expect(rebuildRefusal(token, 'runs', signRebuildRequest(token, 'runs', new Date(now + 3 * REBUILD_REQUEST_MAX_SKEW_MS)), now + 3 * REBUILD_REQUEST_MAX_SKEW_MS, seen)).toBeNull();
    expect(seen.size).toBe(1);
  });
});
