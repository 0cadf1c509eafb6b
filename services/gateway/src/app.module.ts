import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { HealthModule, type Logger, type ReadinessCheck } from '@handplane/platform';
import { auditApp } from './app/audit';
import type { TokenVerifier } from './app/auth';
import { conversationsApp } from './app/conversations';
import { feedOpener } from './app/feeds';
import { promptsApp } from './app/prompts';
import { readModelsApp } from './app/read-models/read-model-queries';
import { projectionsAdminApp } from './app/projections-admin';
import type { RateLimiter } from './app/rate-limit';
import type { GatewayResources } from './app/resources';
import type { SseTickets } from './app/sse-tickets';
import { stdinApp } from './app/stdin';
import { stopsApp } from './app/stops';
import { tasksApp } from './app/tasks';
import { ConsoleModule } from './console/console.module';
import { AdminController } from './http/admin.controller';
import { AdminGuard } from './http/admin.guard';
import { AuthGuard, EventStreamGuard } from './http/auth.guard';
import { ConversationsController } from './http/conversations.controller';
import { HttpErrorFilter } from './http/error-mapping';
import { OpenApiController } from './http/openapi.controller';
import { StdinController } from './http/stdin.controller';
import { TasksController } from './http/tasks.controller';
import { ADMIN_TOKEN, PROJECTIONS_ADMIN_APP, READ_MODELS_APP } from './http/tokens';
import { AUDIT_APP, CONVERSATIONS_APP, FEED_OPENER, LOGGER, PROMPTS_APP, RATE_LIMITER, SSE_SETTINGS, SSE_TICKETS, STDIN_APP, STOPS_APP, TASKS_APP, TOKEN_VERIFIER } from './http/tokens';
import { EventsController, type SseSettings } from './sse/events.controller';

export interface GatewayModuleDeps {
  readonly resources: GatewayResources;
  readonly verifier: TokenVerifier;
  readonly tickets: SseTickets;
  readonly limiter: RateLimiter;
  readonly checks: () => ReadinessCheck[];
  readonly sse: Omit<SseSettings, 'clock'>;
  readonly logger: Logger;
  /** Operator credential of `/v1/admin/*` ('' turns the admin API off). */
  readonly adminToken?: string;
}

/** The gateway's HTTP edge; the use cases are plain functions wired with useFactory. */
@Module({})
export class AppModule {
  static register(d: GatewayModuleDeps): DynamicModule {
    return {
      module: AppModule,
      imports: [HealthModule.register(d.checks), ConsoleModule.register()],
      controllers: [ConversationsController, TasksController, StdinController, EventsController, OpenApiController, AdminController],
      providers: [
        { provide: LOGGER, useValue: d.logger },
        { provide: TOKEN_VERIFIER, useValue: d.verifier },
        { provide: SSE_TICKETS, useValue: d.tickets },
        { provide: RATE_LIMITER, useValue: d.limiter },
        { provide: SSE_SETTINGS, useFactory: (): SseSettings => ({ ...d.sse, clock: d.resources.clock }) },
        { provide: CONVERSATIONS_APP, useFactory: () => conversationsApp(d.resources) },
        { provide: TASKS_APP, useFactory: () => tasksApp(d.resources) },
        { provide: STOPS_APP, useFactory: () => stopsApp(d.resources) },
        { provide: STDIN_APP, useFactory: () => stdinApp(d.resources) },
        { provide: PROMPTS_APP, useFactory: () => promptsApp(d.resources) },
        { provide: AUDIT_APP, useFactory: () => auditApp(d.resources) },
        { provide: READ_MODELS_APP, useFactory: () => readModelsApp(d.resources) },
        { provide: FEED_OPENER, useFactory: () => feedOpener(d.resources) },
        { provide: APP_FILTER, useClass: HttpErrorFilter },
        { provide: ADMIN_TOKEN, useValue: d.adminToken ?? '' },
        { provide: PROJECTIONS_ADMIN_APP, useFactory: () => projectionsAdminApp(d.resources, d.adminToken ?? '') },
        AdminGuard,
        AuthGuard,
        EventStreamGuard,
      ],
    };
  }
}
