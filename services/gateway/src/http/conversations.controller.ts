import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, UseGuards } from '@nestjs/common';
import type { ConversationsApp } from '../app/conversations';
import type { Principal } from '../app/resources';
import type { TasksApp } from '../app/tasks';
import { AuthGuard, Caller } from './auth.guard';
import { CONVERSATIONS_APP, TASKS_APP } from './tokens';

/** `/v1/conversations…` (DESIGN.md §7): parse, call the use case, answer. */
@Controller('v1/conversations')
@UseGuards(AuthGuard)
export class ConversationsController {
  constructor(
    @Inject(CONVERSATIONS_APP) private readonly conversations: ConversationsApp,
    @Inject(TASKS_APP) private readonly tasks: TasksApp,
  ) {}

  @Post()
  @HttpCode(201)
  create(@Caller() p: Principal, @Body() body: unknown, @Headers('idempotency-key') key?: string) {
    return this.conversations.create(p, body, key);
  }

  @Get(':id')
  get(@Caller() p: Principal, @Param('id') id: string) {
    return this.conversations.get(p, id);
  }

  @Post(':id/members')
  @HttpCode(204)
  async addMember(@Caller() p: Principal, @Param('id') id: string, @Body() body: unknown): Promise<void> {
    await this.conversations.addMember(p, id, body);
  }

  @Post(':id/messages')
  @HttpCode(202)
  postMessage(@Caller() p: Principal, @Param('id') id: string, @Body() body: unknown) {
    return this.conversations.postMessage(p, id, body);
  }

  @Post(':id/commands')
  @HttpCode(201)
  startCommand(@Caller() p: Principal, @Param('id') id: string, @Body() body: unknown, @Headers('idempotency-key') key?: string) {
    return this.tasks.startCommand(p, id, body, key);
  }

  @Get(':id/tasks')
  listTasks(@Caller() p: Principal, @Param('id') id: string) {
    return this.tasks.list(p, id);
  }
}
