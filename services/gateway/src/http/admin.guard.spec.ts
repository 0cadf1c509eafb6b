import type { ExecutionContext } from '@nestjs/common';
import { Forbidden, Unauthorized } from '@handplane/kernel';
import { AdminGuard } from './admin.guard';

const ctx = (authorization?: string) => ({ switchToHttp: () => ({ getRequest: () => ({ headers: { authorization } }) }) }) as unknown as ExecutionContext;

describe('AdminGuard (operator routes)', () => {
  it('is off (403) when no ADMIN_TOKEN is configured, whatever is sent', () => {
    expect(() => new AdminGuard('').canActivate(ctx('Bearer '))).toThrow(Forbidden);
    expect(() => new AdminGuard('').canActivate(ctx(undefined))).toThrow(Forbidden);
  });

  it('accepts exactly the configured token as a bearer, nothing else', () => {
    const g = new AdminGuard('s3cret');
    expect(g.canActivate(ctx('Bearer s3cret'))).toBe(true);
    for (const h of [undefined, '', 'Bearer', 'Bearer s3cre', 'Bearer s3cret2', 'Basic s3cret', 's3cret', 'bearer s3cret']) expect(() => g.canActivate(ctx(h))).toThrow(Unauthorized);
  });
});
