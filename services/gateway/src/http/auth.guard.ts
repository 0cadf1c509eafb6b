import { createParamDecorator, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { Unauthorized } from '@handplane/kernel';
import type { TokenVerifier } from '../app/auth';
import type { RateLimiter } from '../app/rate-limit';
import type { Principal } from '../app/resources';
import type { SseTickets } from '../app/sse-tickets';
import { RATE_LIMITER, SSE_TICKETS, TOKEN_VERIFIER } from './tokens';

type Authenticated = Request & { principal?: Principal };

/**
 * Every API route needs a valid bearer token; the caller is attached to the request and takes one
 * request from their rate budget. The tenant comes from the verified claims only (no header, no body).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    @Inject(TOKEN_VERIFIER) private readonly verify: TokenVerifier,
    @Inject(RATE_LIMITER) private readonly limiter: RateLimiter,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<Authenticated>();
    req.principal = await this.verify(req.headers.authorization);
    await this.limiter.take(req.principal);
    return true;
  }
}

// Query parameters in which clients commonly (and wrongly) put a bearer token.
const TOKEN_PARAMS = ['access_token', 'token', 'jwt', 'authorization', 'bearer'];

/**
 * The event stream: a bearer token in the Authorization header, or (for EventSource, which cannot
 * send headers) a ticket from `POST …/events/ticket` in `?ticket=`, valid for this conversation only.
 */
@Injectable()
export class EventStreamGuard implements CanActivate {
  constructor(
    @Inject(TOKEN_VERIFIER) private readonly verify: TokenVerifier,
    @Inject(SSE_TICKETS) private readonly tickets: SseTickets,
    @Inject(RATE_LIMITER) private readonly limiter: RateLimiter,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<Authenticated>();
    const q = req.query as Record<string, unknown>;
    if (TOKEN_PARAMS.some((k) => k in q)) throw new Unauthorized('tokens are not accepted in URLs: send an Authorization header or use an event-stream ticket');
    const ticket = q.ticket;
    if (req.headers.authorization !== undefined || ticket === undefined) req.principal = await this.verify(req.headers.authorization);
    else if (typeof ticket === 'string' && ticket) req.principal = await this.tickets.verify(ticket, String(req.params.id));
    else throw new Unauthorized('invalid ticket');
    await this.limiter.take(req.principal);
    return true;
  }
}

/** The authenticated caller (set by AuthGuard or EventStreamGuard). */
export const Caller = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const p = ctx.switchToHttp().getRequest<Authenticated>().principal;
  if (!p) throw new Error('AuthGuard did not run');
  return p;
});
