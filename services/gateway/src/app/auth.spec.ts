import { SignJWT } from 'jose';
import { Unauthorized } from '@handplane/kernel';
import { assertSafeAuthConfig, createTokenVerifier } from './auth';
import { DEV_JWT_SECRET, signDevToken } from './dev-token';

describe('token verification (HS256)', () => {
  const verify = createTokenVerifier({ JWT_SECRET: 's3cret', JWKS_URL: '' });

  it('accepts a dev token and yields the caller', async () => {
    const token = await signDevToken({ sub: 'alice', tenant: 'acme', name: 'Alice' }, 's3cret', 60);
    expect(await verify(`Bearer ${token}`)).toEqual({ userId: 'alice', tenant: 'acme', name: 'Alice', expiresAt: expect.any(Number) });
  });

  it.each([
    ['no header', undefined],
    ['another scheme', 'Basic YWxpY2U6eA=='],
    ['garbage', 'Bearer abc'],
  ])('refuses %s', async (_what, header) => {
    await expect(verify(header)).rejects.toBeInstanceOf(Unauthorized);
  });

  it('refuses expired, forged, unsigned and incomplete tokens', async () => {
    const key = new TextEncoder().encode('s3cret');
    const exp = Math.floor(Date.now() / 1000) + 60;
    const cases = [
      await signDevToken({ sub: 'alice', tenant: 'acme' }, 's3cret', -60),
      await signDevToken({ sub: 'alice', tenant: 'acme' }, 'other', 60),
      await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').sign(key), // no exp
      await new SignJWT({ tenant: '' }).setProtectedHeader({ alg: 'HS256' }).setSubject('alice').setExpirationTime(exp).sign(key),
      await new SignJWT({ tenant: 'acme' }).setProtectedHeader({ alg: 'HS512' }).setSubject('alice').setExpirationTime(exp).sign(key),
    ];
    for (const t of cases) await expect(verify(`Bearer ${t}`)).rejects.toBeInstanceOf(Unauthorized);
  });

  it('never accepts the development secret once a JWKS is configured', async () => {
    const withJwks = createTokenVerifier({ JWT_SECRET: DEV_JWT_SECRET, JWKS_URL: 'http://127.0.0.1:9/jwks.json' });
    const token = await signDevToken({ sub: 'alice', tenant: 'acme' });
    await expect(withJwks(`Bearer ${token}`)).rejects.toBeInstanceOf(Unauthorized);
  });

  it('refuses to run in production with the development secret', () => {
    expect(() => assertSafeAuthConfig({ NODE_ENV: 'production', JWT_SECRET: DEV_JWT_SECRET, JWKS_URL: '' })).toThrow(/development default/);
    expect(() => assertSafeAuthConfig({ NODE_ENV: 'production', JWT_SECRET: 'real', JWKS_URL: '' })).not.toThrow();
    expect(() => assertSafeAuthConfig({ NODE_ENV: 'production', JWT_SECRET: DEV_JWT_SECRET, JWKS_URL: 'https://idp/jwks' })).not.toThrow();
    expect(() => assertSafeAuthConfig({ NODE_ENV: 'development', JWT_SECRET: DEV_JWT_SECRET, JWKS_URL: '' })).not.toThrow();
  });
});

describe('startGateway in production', () => {
  it('refuses the development secret before touching anything', async () => {
    // Required lazily: the service module pulls in Nest.
    const { startGateway } = await import('../service');
    const { loadConfig } = await import('@handplane/contracts');
    await expect(startGateway(loadConfig({ NODE_ENV: 'production', NATS_URL: 'nats://127.0.0.1:1', DATABASE_URL: 'postgres://x@127.0.0.1:1/x' }))).rejects.toThrow(/development default/);
  });
});
