import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type ReadinessCheck } from '@handplane/platform';

/** The coordinator's HTTP surface: `/healthz` and `/readyz` (its work arrives over NATS). */
@Module({})
export class AppModule {
  static register(checks: () => ReadinessCheck[]): DynamicModule {
    return { module: AppModule, imports: [HealthModule.register(checks)] };
  }
}
