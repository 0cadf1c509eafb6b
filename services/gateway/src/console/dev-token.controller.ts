import { Body, Controller, Get, HttpCode, Inject, Post } from '@nestjs/common';
import { z } from 'zod';
import { Forbidden } from '@handplane/kernel';
import { signDevToken } from '../app/dev-token';
import { parseInput } from '../app/validate';
import type { ConsoleSettings } from './console-settings';
import { CONSOLE_SETTINGS } from './console.tokens';

// The same shape the token verifier accepts for `sub` and `tenant`.
const claim = z.string().regex(/^[^\s\0]{1,200}$/, 'must be 1–200 characters without spaces');
const devTokenRequest = z.object({ userId: claim, tenant: claim, name: z.string().trim().min(1).max(200).optional() }).strict();

const TTL_SECONDS = 12 * 3600;

/**
 * `/console/dev-token`: signs a token for any user of any tenant, so it exists for development
 * only: outside production the console offers a button for it; in production it is refused.
 */
@Controller('console/dev-token')
export class DevTokenController {
  constructor(@Inject(CONSOLE_SETTINGS) private readonly settings: ConsoleSettings) {}

  /** Whether the endpoint is on (the console shows its button only then). */
  @Get()
  status(): { enabled: true } {
    this.secret();
    return { enabled: true };
  }

  @Post()
  @HttpCode(201)
  async issue(@Body() body: unknown): Promise<{ token: string; expiresAt: string }> {
    const secret = this.secret();
    const input = parseInput(devTokenRequest, body);
    const token = await signDevToken({ sub: input.userId, tenant: input.tenant, ...(input.name ? { name: input.name } : {}) }, secret, TTL_SECONDS);
    return { token, expiresAt: new Date(Date.now() + TTL_SECONDS * 1000).toISOString() };
  }

  private secret(): string {
    if (!this.settings.devTokens) throw new Forbidden('development tokens are disabled (NODE_ENV=production or JWKS-only auth)');
    return this.settings.devTokens.secret;
  }
}
