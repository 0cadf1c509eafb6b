import { Controller, Get, Inject, Param, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import type { Principal } from '../app/resources';
import type { TasksApp } from '../app/tasks';
import { AuthGuard, Caller } from './auth.guard';
import { TASKS_APP } from './tokens';

/** `/v1/tasks/:taskId…` (DESIGN.md §7). */
@Controller('v1/tasks')
@UseGuards(AuthGuard)
export class TasksController {
  constructor(@Inject(TASKS_APP) private readonly tasks: TasksApp) {}

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
      })
      .end(slice.bytes);
  }
}
