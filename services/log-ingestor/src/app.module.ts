import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type ReadinessCheck } from '@handplane/platform';

/** The ingestor's HTTP surface: `/healthz` and `/readyz` only (its work is consumers and workers). */
@Module({})
export class AppModule {
  static register(o: { checks: () => ReadinessCheck[] }): DynamicModule {
    return { module: AppModule, imports: [HealthModule.register(o.checks)] };
  }
}
