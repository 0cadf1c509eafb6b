import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { HealthModule, type Logger, type ReadinessCheck } from '@handplane/platform';
import type { TokenVerifier } from './app/auth';
import { conversationsApp } from './app/conversations';
import { feedOpener } from './app/feeds';
import type { GatewayResources } from './app/resources';
import { tasksApp } from './app/tasks';
import { AuthGuard } from './http/auth.guard';
import { ConversationsController } from './http/conversations.controller';
import { HttpErrorFilter } from './http/error-mapping';
import { TasksController } from './http/tasks.controller';
import { CONVERSATIONS_APP, FEED_OPENER, LOGGER, SSE_SETTINGS, TASKS_APP, TOKEN_VERIFIER } from './http/tokens';
import { EventsController } from './sse/events.controller';

export interface GatewayModuleDeps {
  readonly resources: GatewayResources;
  readonly verifier: TokenVerifier;
  readonly checks: () => ReadinessCheck[];
  readonly heartbeatMs: number;
  readonly logger: Logger;
}

/** The gateway's HTTP edge; the use cases are plain functions wired with useFactory. */
@Module({})
export class AppModule {
  static register(d: GatewayModuleDeps): DynamicModule {
    return {
      module: AppModule,
      imports: [HealthModule.register(d.checks)],
      controllers: [ConversationsController, TasksController, EventsController],
      providers: [
        { provide: LOGGER, useValue: d.logger },
        { provide: TOKEN_VERIFIER, useValue: d.verifier },
        { provide: SSE_SETTINGS, useValue: { heartbeatMs: d.heartbeatMs } },
        { provide: CONVERSATIONS_APP, useFactory: () => conversationsApp(d.resources) },
        { provide: TASKS_APP, useFactory: () => tasksApp(d.resources) },
        { provide: FEED_OPENER, useFactory: () => feedOpener(d.resources) },
        { provide: APP_FILTER, useClass: HttpErrorFilter },
        AuthGuard,
      ],
    };
  }
}
