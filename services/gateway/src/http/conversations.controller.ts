import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Res, UseGuards } from '@nestjs/common';
import type { Response } from 'express';
import type { AuditApp } from '../app/audit';
import type { PromptsApp } from '../app/prompts';
import type { ReadModelsApp } from '../app/read-models/read-model-queries';
import type { StopsApp } from '../app/stops';
import type { ConversationsApp } from '../app/conversations';
import type { Principal } from '../app/resources';
import type { TasksApp } from '../app/tasks';
import { AuthGuard, Caller } from './auth.guard';
import { page } from './paged';
import { AUDIT_APP, CONVERSATIONS_APP, PROMPTS_APP, READ_MODELS_APP, STOPS_APP, TASKS_APP } from './tokens';

/** `/v1/conversations…` (DESIGN.md §7): parse, call the use case, answer. */
@Controller('v1/conversations')
@UseGuards(AuthGuard)
export class ConversationsController {
  constructor(
    @Inject(CONVERSATIONS_APP) private readonly conversations: ConversationsApp,
    @Inject(TASKS_APP) private readonly tasks: TasksApp,
    @Inject(STOPS_APP) private readonly stops: StopsApp,
    @Inject(PROMPTS_APP) private readonly prompts: PromptsApp,
    @Inject(AUDIT_APP) private readonly audit: AuditApp,
    @Inject(READ_MODELS_APP) private readonly readModels: ReadModelsApp,
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

  @Post(':id/stop-all')
  @HttpCode(202)
  stopAll(@Caller() p: Principal, @Param('id') id: string, @Body() body: unknown) {
    return this.stops.stopAll(p, id, body);
  }

  @Post(':id/approvals/:approvalId')
  @HttpCode(204)
  async resolveApproval(@Caller() p: Principal, @Param('id') id: string, @Param('approvalId') approvalId: string, @Body() body: unknown): Promise<void> {
    await this.prompts.resolveApproval(p, id, approvalId, body);
  }

  @Post(':id/questions/:questionId/answer')
  @HttpCode(204)
  async answerQuestion(@Caller() p: Principal, @Param('id') id: string, @Param('questionId') questionId: string, @Body() body: unknown): Promise<void> {
    await this.prompts.answerQuestion(p, id, questionId, body);
  }

  /** The log in order; `X-Next-After` says where the next page starts when there is more. */
  @Get(':id/audit')
  async auditLog(
    @Caller() p: Principal,
    @Param('id') id: string,
    @Query('after') after: unknown,
    @Query('limit') limit: unknown,
    @Query('include') include: unknown,
    @Res({ passthrough: true }) res: Response,
  ) {
    const r = await this.audit.read(p, id, { after, limit, include });
    return page(res, r.entries, r.nextAfter);
  }

  /** The runs of the agent, oldest first, paged by `started_seq` like the audit. */
  @Get(':id/runs')
  async runs(@Caller() p: Principal, @Param('id') id: string, @Query('after') after: unknown, @Query('limit') limit: unknown, @Res({ passthrough: true }) res: Response) {
    const r = await this.readModels.runs(p, id, { after, limit });
    return page(res, r.rows, r.nextAfter);
  }

  @Get(':id/todos')
  todos(@Caller() p: Principal, @Param('id') id: string) {
    return this.readModels.todos(p, id);
  }

  /** What was queued for the agent and the run each item started; `pending=true` keeps the unstarted ones. Paged by `seq`. */
  @Get(':id/queue')
  async queue(@Caller() p: Principal, @Param('id') id: string, @Query('pending') pending: unknown, @Query('after') after: unknown, @Query('limit') limit: unknown, @Res({ passthrough: true }) res: Response) {
    const r = await this.readModels.queue(p, id, { pending, after, limit });
    return page(res, r.rows, r.nextAfter);
  }
}
