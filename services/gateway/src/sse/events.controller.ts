import { Controller, Get, Headers, HttpCode, Inject, Param, Post, Query, Res, UseGuards, type BeforeApplicationShutdown } from '@nestjs/common';
import type { Response } from 'express';
import type { Clock } from '@handplane/kernel';
import type { Logger } from '@handplane/platform';
import type { FeedOpener } from '../app/feeds';
import type { Principal } from '../app/resources';
import type { SseTickets } from '../app/sse-tickets';
import { AuthGuard, Caller, EventStreamGuard } from '../http/auth.guard';
import { FEED_OPENER, LOGGER, SSE_SETTINGS, SSE_TICKETS } from '../http/tokens';
import { pipeFeed } from './sse-stream';

/** What the event stream needs besides the feed. */
export interface SseSettings {
  readonly heartbeatMs: number;
  readonly maxBufferBytes: number;
  readonly clock: Clock;
}

/**
 * `GET /v1/conversations/:id/events`: the conversation's CONV events as Server-Sent Events;
 * `GET /v1/tasks/:taskId/output/follow`: one task's output, live, from LOGS.
 */
@Controller('v1')
export class EventsController implements BeforeApplicationShutdown {
  private readonly open = new Set<() => Promise<void>>();

  constructor(
    @Inject(FEED_OPENER) private readonly feeds: FeedOpener,
    @Inject(SSE_TICKETS) private readonly tickets: SseTickets,
    @Inject(SSE_SETTINGS) private readonly settings: SseSettings,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  /** A 60 s ticket for `EventSource` (which cannot send headers): `GET …/events?ticket=…`. */
  @Post('conversations/:id/events/ticket')
  @HttpCode(201)
  @UseGuards(AuthGuard)
  ticket(@Caller() p: Principal, @Param('id') id: string) {
    return this.tickets.issue(p, id);
  }

  @Get('conversations/:id/events')
  @UseGuards(EventStreamGuard)
  async events(
    @Caller() p: Principal,
    @Param('id') id: string,
    @Query('after') after: unknown,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    // Membership and the resume point are checked before any byte is sent, so errors are still JSON.
    const feed = await this.feeds.open(p, id, lastEventId, after);
    this.stream(p, feed, res, { conversationId: id });
  }

  /**
   * A task's output as it is produced, exact (base64 chunks at their byte offsets), from `?offset=`
   * or `Last-Event-ID` (each event's id is the offset after it), ending with `end` once the exit is
   * recorded and every byte was sent. For people watching a background task; agents wait instead.
   */
  @Get('tasks/:taskId/output/follow')
  @UseGuards(AuthGuard)
  async followOutput(
    @Caller() p: Principal,
    @Param('taskId') taskId: string,
    @Query('offset') offset: unknown,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    const feed = await this.feeds.openOutput(p, taskId, lastEventId, offset);
    this.stream(p, feed, res, { taskId });
  }

  private stream(p: Principal, feed: Awaited<ReturnType<FeedOpener['open']>>, res: Response, about: Record<string, string>): void {
    const expiresInMs = p.expiresAt === undefined ? undefined : p.expiresAt * 1000 - this.settings.clock.now().getTime();
    const done = pipeFeed(feed, res, { heartbeatMs: this.settings.heartbeatMs, maxBufferBytes: this.settings.maxBufferBytes, ...(expiresInMs === undefined ? {} : { expiresInMs }) }, (why, err) => {
      if (err) this.logger.warn({ err, ...about, why }, 'event stream ended with an error');
      else if (why === 'slow_client' || why === 'expired') this.logger.info({ ...about, userId: p.userId, why }, 'event stream ended');
    });
    this.open.add(done.stop);
    void done.finished.finally(() => this.open.delete(done.stop));
  }

  /** Long-lived streams would keep the HTTP server from closing: end them first. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.open].map((stop) => stop()));
  }
}
