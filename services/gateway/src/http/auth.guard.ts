import { createParamDecorator, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import type { TokenVerifier } from '../app/auth';
import type { Principal } from '../app/resources';
import { TOKEN_VERIFIER } from './tokens';

type Authenticated = Request & { principal?: Principal };

/** Every API route needs a valid bearer token; the caller is attached to the request. */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(@Inject(TOKEN_VERIFIER) private readonly verify: TokenVerifier) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<Authenticated>();
    req.principal = await this.verify(req.headers.authorization);
    return true;
  }
}

/** The authenticated caller (set by AuthGuard). */
export const Caller = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal => {
  const p = ctx.switchToHttp().getRequest<Authenticated>().principal;
  if (!p) throw new Error('AuthGuard did not run');
  return p;
});
