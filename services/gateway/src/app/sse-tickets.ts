import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import { Unauthorized } from '@handplane/kernel';
import type { Config } from '@handplane/contracts';
import { principalOf, TICKET_AUDIENCE } from './auth';
import { requireConversation } from './conversation-read';
import { DEV_JWT_SECRET } from './dev-token';
import type { GatewayResources, Principal } from './resources';

/** How long a ticket may be used to open (or re-open) a stream. */
export const TICKET_TTL_SECONDS = 60;

/**
 * Short-lived tickets for `EventSource`, which cannot send an Authorization header: a ticket opens
 * the event stream of ONE conversation for ONE user for 60 s, and is refused everywhere else. The
 * stream it opens still ends when the bearer token it was issued for expires (`sx`), so a ticket
 * never extends a session. A long-lived token is never accepted in a URL.
 */
export interface SseTickets {
  issue(p: Principal, conversationId: string): Promise<{ ticket: string; expiresAt: string }>;
  /** The caller a ticket stands for; Unauthorized when forged, expired or for another conversation. */
  verify(ticket: string, conversationId: string): Promise<Principal>;
}

/**
 * The signing key: SSE_TICKET_SECRET, else one derived from JWT_SECRET (so every replica agrees).
 * With a JWKS and the public development secret there is nothing secret to derive from: a random
 * per-process key is used (tickets then work only on the replica that issued them; set SSE_TICKET_SECRET).
 */
export function ticketKey(config: Pick<Config, 'SSE_TICKET_SECRET' | 'JWT_SECRET' | 'JWKS_URL'>): { key: Uint8Array; shared: boolean } {
  if (config.SSE_TICKET_SECRET) return { key: new TextEncoder().encode(config.SSE_TICKET_SECRET), shared: true };
  if (config.JWKS_URL && config.JWT_SECRET === DEV_JWT_SECRET) return { key: randomBytes(32), shared: false };
  return { key: createHmac('sha256', config.JWT_SECRET).update('handplane sse ticket v1').digest(), shared: true };
}

export function sseTickets(r: Pick<GatewayResources, 'pool' | 'clock'>, key: Uint8Array): SseTickets {
  return {
    async issue(p, conversationId) {
      await requireConversation(r.pool, p, conversationId);
      const now = Math.floor(r.clock.now().getTime() / 1000);
      const exp = p.expiresAt === undefined ? now + TICKET_TTL_SECONDS : Math.min(now + TICKET_TTL_SECONDS, p.expiresAt);
      const ticket = await new SignJWT({ tenant: p.tenant, cid: conversationId, ...(p.name ? { name: p.name } : {}), ...(p.expiresAt ? { sx: p.expiresAt } : {}) })
        .setProtectedHeader({ alg: 'HS256', typ: 'hp-sse-ticket' })
        .setSubject(p.userId)
        .setAudience(TICKET_AUDIENCE)
        .setJti(randomUUID())
        .setIssuedAt(now)
        .setExpirationTime(exp)
        .sign(key);
      return { ticket, expiresAt: new Date(exp * 1000).toISOString() };
    },

    async verify(ticket, conversationId) {
      let payload;
      try {
        payload = (await jwtVerify(ticket, key, { algorithms: ['HS256'], audience: TICKET_AUDIENCE, requiredClaims: ['exp', 'sub'], typ: 'hp-sse-ticket', clockTolerance: 2 })).payload;
      } catch (e) {
        throw new Unauthorized(`invalid ticket: ${(e as { code?: string }).code ?? 'rejected'}`, { cause: e });
      }
      if (payload.cid !== conversationId) throw new Unauthorized('the ticket is for another conversation');
      return principalOf(payload, typeof payload.sx === 'number' ? payload.sx : undefined);
    },
  };
}
