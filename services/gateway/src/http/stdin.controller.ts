import { Body, Controller, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import type { Principal } from '../app/resources';
import type { StdinApp } from '../app/stdin';
import { AuthGuard, Caller } from './auth.guard';
import { STDIN_APP } from './tokens';

/** `POST /v1/tasks/:taskId/stdin` (DESIGN.md §7): 202 once the runner took the bytes. */
@Controller('v1/tasks')
@UseGuards(AuthGuard)
export class StdinController {
  constructor(@Inject(STDIN_APP) private readonly stdin: StdinApp) {}

  @Post(':taskId/stdin')
  @HttpCode(202)
  write(@Caller() p: Principal, @Param('taskId') taskId: string, @Body() body: unknown) {
    return this.stdin.write(p, taskId, body);
  }
}
