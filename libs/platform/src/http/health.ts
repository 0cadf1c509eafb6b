import { Controller, Get, Inject, Module, Res, type DynamicModule } from '@nestjs/common';
import type { Response } from 'express';

/** A readiness check: resolves when the dependency answers, rejects (with a reason) when not. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}

export const READINESS_CHECKS = Symbol('READINESS_CHECKS');

async function withTimeout(p: Promise<void>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise<void>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms)))]);
  } finally {
    if (t) clearTimeout(t);
  }
}

@Controller()
export class HealthController {
  constructor(@Inject(READINESS_CHECKS) private readonly checks: ReadinessCheck[]) {}

  /** Liveness: the process answers. */
  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  /** Readiness: every dependency answers; 503 with the failing ones otherwise. */
  @Get('readyz')
  async readyz(@Res() res: Response) {
    const results = await Promise.all(
      this.checks.map(async (c) => {
        try {
          await withTimeout(c.check(), 2000);
          return { name: c.name, ok: true };
        } catch (e) {
          return { name: c.name, ok: false, reason: (e as Error).message };
        }
      }),
    );
    const ok = results.every((r) => r.ok);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready', checks: results });
  }
}

/** `/healthz` and `/readyz` for a service, with its own readiness checks. */
@Module({})
export class HealthModule {
  static register(checks: () => ReadinessCheck[]): DynamicModule {
    return { module: HealthModule, controllers: [HealthController], providers: [{ provide: READINESS_CHECKS, useFactory: checks }] };
  }
}
