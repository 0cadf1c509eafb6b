import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import type { AuditApp } from '../app/audit';
import type { ReadModelsApp } from '../app/read-models/read-model-queries';
import type { Principal } from '../app/resources';
import type { StopsApp } from '../app/stops';
import type { TasksApp } from '../app/tasks';
import { AuthGuard, Caller } from './auth.guard';
import { page } from './paged';
import { AUDIT_APP, READ_MODELS_APP, STOPS_APP, TASKS_APP } from './tokens';

/** `/v1/tasks…` (DESIGN.md §7) and the task read models (attempts, log index); stdin is in `stdin.controller.ts`. */
@Controller('v1/tasks')
@UseGuards(AuthGuard)
export class TasksController {
  constructor(
    @Inject(TASKS_APP) private readonly tasks: TasksApp,
    @Inject(STOPS_APP) private readonly stops: StopsApp,
    @Inject(AUDIT_APP) private readonly audit: AuditApp,
    @Inject(READ_MODELS_APP) private readonly readModels: ReadModelsApp,
  ) {}

  /** The task's own events (TASKS `task.<id>` and `cmd.<commandId>` of every attempt), upcast, with who and when. */
  @Get(':taskId/audit')
  auditLog(@Caller() p: Principal, @Param('taskId') taskId: string) {
    return this.audit.task(p, taskId);
  }

  /** The registry: every task the caller may see. */
  @Get()
  registry(
    @Caller() p: Principal,
    @Query('status') status: unknown,
    @Query('conversation') conversation: unknown,
    @Query('user') user: unknown,
    @Query('overdue') overdue: unknown,
    @Query('awaiting') awaiting: unknown,
    @Query('limit') limit: unknown,
  ) {
    return this.tasks.registry(p, { status, conversation, user, overdue, awaiting, limit });
  }

  /** Unfinished tasks past their deadline (plus OVERDUE_GRACE_MS) the caller may see, with their count (issue 10.3). Declared before `:taskId`. */
  @Get('overdue')
  overdue(@Caller() p: Principal) {
    return this.tasks.overdue(p);
  }

  /** Every attempt of the task (the `commands` read model), in order. */
  @Get(':taskId/commands')
  commands(@Caller() p: Principal, @Param('taskId') taskId: string) {
    return this.readModels.commands(p, taskId);
  }

  /** Where one attempt's output sits in LOGS, by byte offset; `X-Next-After` (an offset) when more follow. */
  @Get(':taskId/commands/:commandId/log-index')
  async logIndex(
    @Caller() p: Principal,
    @Param('taskId') taskId: string,
    @Param('commandId') commandId: string,
    @Query('after') after: unknown,
    @Query('limit') limit: unknown,
    @Res({ passthrough: true }) res: Response,
  ) {
    const r = await this.readModels.logIndex(p, taskId, commandId, { after, limit });
    return page(res, r.rows, r.nextAfter);
  }

  @Post(':taskId/stop')
  @HttpCode(202)
  stop(@Caller() p: Principal, @Param('taskId') taskId: string, @Body() body: unknown) {
    return this.stops.stopTask(p, taskId, body);
  }

  @Get(':taskId')
  get(@Caller() p: Principal, @Param('taskId') taskId: string) {
    return this.tasks.get(p, taskId);
  }

  /** Raw bytes from `offset`; the headers say where to go on and whether this is all of it. */
  @Get(':taskId/output')
  async output(@Caller() p: Principal, @Param('taskId') taskId: string, @Query('offset') offset: unknown, @Res() res: Response): Promise<void> {
    const slice = await this.tasks.output(p, taskId, offset);
    res
      .status(200)
      .set({
        'Content-Type': 'application/octet-stream',
        'Cache-Control': 'no-store',
        'X-Next-Offset': String(slice.nextOffset),
        'X-Result-State': slice.resultState,
        'X-Output-Complete': String(slice.complete),
        ...(slice.truncated ? { 'X-Output-Truncated': `${slice.truncated.from}-${slice.truncated.to}` } : {}),
      })
      .end(slice.bytes);
  }
}
