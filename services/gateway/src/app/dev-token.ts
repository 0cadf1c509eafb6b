import { SignJWT } from 'jose';

/** The development secret of DESIGN.md §10; the gateway refuses it in production. */
export const DEV_JWT_SECRET = 'dev-secret-change-me';

/**
 * Signs an HS256 token the gateway accepts (`sub`, `tenant`, optional `name`, `iat`, `exp`).
 * For development, tests and the CLI; a negative `ttlSeconds` makes an already expired token.
 */
export async function signDevToken(claims: { sub: string; tenant: string; name?: string }, secret: string = DEV_JWT_SECRET, ttlSeconds = 12 * 3600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tenant: claims.tenant, ...(claims.name ? { name: claims.name } : {}) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject(claims.sub)
    .setIssuedAt(now)
    .setExpirationTime(now + ttlSeconds)
    .sign(new TextEncoder().encode(secret));
}
