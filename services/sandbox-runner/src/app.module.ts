import { Module, type DynamicModule } from '@nestjs/common';
import { HealthModule, type ReadinessCheck } from '@handplane/platform';

/** The runner's HTTP side is only health: its real interface is the gRPC server. */
@Module({})
export class AppModule {
  static register(checks: () => ReadinessCheck[]): DynamicModule {
    return { module: AppModule, imports: [HealthModule.register(checks)] };
  }
}
