import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { Unauthorized, Unavailable } from '@handplane/kernel';
import type { Config } from '@handplane/contracts';
import { DEV_JWT_SECRET } from './dev-token';
import type { Principal } from './resources';

/** The `aud` of SSE tickets (sse-tickets.ts). */
export const TICKET_AUDIENCE = 'handplane:sse-ticket';

/** Turns a bearer token into the caller, or throws Unauthorized (missing, forged, expired, incomplete). */
export type TokenVerifier = (authorization: string | undefined) => Promise<Principal>;

const CLAIM = /^[^\s\0]{1,200}$/;

/** Refuses to run in production with the development secret and no JWKS (DESIGN.md §7). */
export function assertSafeAuthConfig(config: Pick<Config, 'NODE_ENV' | 'JWT_SECRET' | 'JWKS_URL'>): void {
  if (config.NODE_ENV === 'production' && config.JWT_SECRET === DEV_JWT_SECRET && !config.JWKS_URL) {
    throw new Error('refusing to start: JWT_SECRET is the development default in production (set JWT_SECRET or JWKS_URL)');
  }
}

/** The caller named by verified claims (`sub`, `tenant`, optional `name`); shared with SSE tickets. */
export function principalOf(payload: JWTPayload, expiresAt = payload.exp): Principal {
  const { sub, tenant, name } = payload as JWTPayload & { tenant?: unknown; name?: unknown };
  if (typeof sub !== 'string' || !CLAIM.test(sub)) throw new Unauthorized('token has no usable sub claim');
  if (typeof tenant !== 'string' || !CLAIM.test(tenant)) throw new Unauthorized('token has no usable tenant claim');
  return { userId: sub, tenant, ...(typeof name === 'string' && name ? { name } : {}), ...(typeof expiresAt === 'number' ? { expiresAt } : {}) };
}

// An SSE ticket is never a bearer token, even where both keys happen to be the same.
function bearerPrincipal(payload: JWTPayload): Principal {
  const aud = payload.aud;
  if (aud === TICKET_AUDIENCE || (Array.isArray(aud) && aud.includes(TICKET_AUDIENCE))) throw new Unauthorized('an event-stream ticket is not a bearer token');
  return principalOf(payload);
}

/**
 * HS256 with JWT_SECRET, or RS256 through JWKS_URL. With a JWKS the development secret is never
 * accepted; `exp` is required and honoured (with a few seconds of clock tolerance).
 */
export function createTokenVerifier(config: Pick<Config, 'JWT_SECRET' | 'JWKS_URL'>): TokenVerifier {
  const jwks = config.JWKS_URL ? createRemoteJWKSet(new URL(config.JWKS_URL)) : undefined;
  const hmac = !jwks || config.JWT_SECRET !== DEV_JWT_SECRET ? new TextEncoder().encode(config.JWT_SECRET) : undefined;
  const options = { requiredClaims: ['exp', 'sub'], clockTolerance: 5 };
  return async (authorization) => {
    const m = /^Bearer\s+([A-Za-z0-9._~+/=-]+)\s*$/i.exec(authorization ?? '');
    if (!m) throw new Unauthorized('missing bearer token');
    const token = m[1]!;
    let alg: string | undefined;
    try {
      alg = decodeProtectedHeader(token).alg;
    } catch {
      throw new Unauthorized('malformed token');
    }
    try {
      if (alg === 'HS256' && hmac) return bearerPrincipal((await jwtVerify(token, hmac, { ...options, algorithms: ['HS256'] })).payload);
      if (alg === 'RS256' && jwks) return bearerPrincipal((await jwtVerify(token, jwks, { ...options, algorithms: ['RS256'] })).payload);
    } catch (e) {
      if (e instanceof Unauthorized) throw e;
      const code = (e as { code?: string }).code;
      // The key set could not be fetched: our trouble, not the caller's.
      if (alg === 'RS256' && (code === 'ERR_JWKS_TIMEOUT' || !code?.startsWith('ERR_'))) throw new Unavailable('cannot fetch the signing keys', { cause: e });
      // jose says why (expired, bad signature, …); the reason is safe to show, the token never is.
      throw new Unauthorized(`invalid token: ${code ?? 'rejected'}`, { cause: e });
    }
    throw new Unauthorized(`token algorithm ${String(alg)} is not accepted`);
  };
}
