import { createHash, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { Forbidden, Unauthorized } from '@handplane/kernel';
import { ADMIN_TOKEN } from './tokens';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Operator routes (`/v1/admin/*`): the bearer must be ADMIN_TOKEN itself. A tenant user's JWT never
 * passes, however valid; with no ADMIN_TOKEN configured the admin API is off (403).
 */
@Injectable()
export class AdminGuard implements CanActivate {
  constructor(@Inject(ADMIN_TOKEN) private readonly token: string) {}

  canActivate(ctx: ExecutionContext): boolean {
    if (!this.token) throw new Forbidden('the admin API is off: set ADMIN_TOKEN on the gateway');
    const header = ctx.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    const given = /^Bearer (.+)$/.exec(header)?.[1] ?? '';
    // Equal-length digests: the comparison takes the same time whatever was sent.
    if (!given || !timingSafeEqual(digest(given), digest(this.token))) throw new Unauthorized('an operator token (ADMIN_TOKEN) is required');
    return true;
  }
}
