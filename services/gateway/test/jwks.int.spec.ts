import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { Unauthorized, Unavailable } from '@handplane/kernel';
import { createTokenVerifier } from '../src/app/auth';

/** RS256 through a real JWKS endpoint on loopback. */
describe('token verification (RS256 via JWKS_URL)', () => {
  let server: Server;
  let url: string;
  let sign: (claims: Record<string, unknown>, kid?: string) => Promise<string>;
  beforeAll(async () => {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    server = createServer((_req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/jwks.json`;
    sign = (claims, kid = 'k1') =>
      new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid }).setSubject('alice').setExpirationTime(Math.floor(Date.now() / 1000) + 60).sign(privateKey);
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('accepts a token signed by a key of the set', async () => {
    const verify = createTokenVerifier({ JWT_SECRET: 'dev-secret-change-me', JWKS_URL: url });
    expect(await verify(`Bearer ${await sign({ tenant: 'acme' })}`)).toEqual({ userId: 'alice', tenant: 'acme', expiresAt: expect.any(Number) });
  });

  it('refuses an unknown key and a missing tenant', async () => {
    const verify = createTokenVerifier({ JWT_SECRET: 'dev-secret-change-me', JWKS_URL: url });
    await expect(verify(`Bearer ${await sign({ tenant: 'acme' }, 'other')}`)).rejects.toBeInstanceOf(Unauthorized);
    await expect(verify(`Bearer ${await sign({})}`)).rejects.toBeInstanceOf(Unauthorized);
  });

  it('says unavailable (not unauthorized) when the key set cannot be fetched', async () => {
    const verify = createTokenVerifier({ JWT_SECRET: 'dev-secret-change-me', JWKS_URL: 'http://127.0.0.1:9/jwks.json' });
    await expect(verify(`Bearer ${await sign({ tenant: 'acme' })}`)).rejects.toBeInstanceOf(Unavailable);
  });
});
