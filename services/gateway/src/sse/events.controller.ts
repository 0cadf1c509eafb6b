import { Controller, Get, Headers, Inject, Param, Query, Res, UseGuards, type BeforeApplicationShutdown } from '@nestjs/common';
import type { Response } from 'express';
import type { Logger } from '@handplane/platform';
import type { FeedOpener } from '../app/feeds';
import type { Principal } from '../app/resources';
import { AuthGuard, Caller } from '../http/auth.guard';
import { FEED_OPENER, LOGGER, SSE_SETTINGS } from '../http/tokens';
import { pipeFeed } from './sse-stream';

/** `GET /v1/conversations/:id/events`: the conversation's CONV events as Server-Sent Events. */
@Controller('v1/conversations')
@UseGuards(AuthGuard)
export class EventsController implements BeforeApplicationShutdown {
  private readonly open = new Set<() => Promise<void>>();

  constructor(
    @Inject(FEED_OPENER) private readonly feeds: FeedOpener,
    @Inject(SSE_SETTINGS) private readonly settings: { heartbeatMs: number },
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  @Get(':id/events')
  async events(
    @Caller() p: Principal,
    @Param('id') id: string,
    @Query('after') after: unknown,
    @Headers('last-event-id') lastEventId: string | undefined,
    @Res() res: Response,
  ): Promise<void> {
    // Membership and the resume point are checked before any byte is sent, so errors are still JSON.
    const feed = await this.feeds.open(p, id, lastEventId, after);
    const done = pipeFeed(feed, res, this.settings.heartbeatMs, (err) => this.logger.warn({ err, conversationId: id }, 'event stream ended with an error'));
    this.open.add(done.stop);
    void done.finished.finally(() => this.open.delete(done.stop));
  }

  /** Long-lived streams would keep the HTTP server from closing: end them first. */
  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all([...this.open].map((stop) => stop()));
  }
}
