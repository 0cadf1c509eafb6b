import type { Response } from 'express';
import type { ConversationFeed, FeedEvent } from '../app/event-feed';

/** Formats one event; JSON never contains a raw newline, so `data` is one line. */
export function formatSse(e: FeedEvent): string {
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data ?? null)}\n\n`;
}

/** How a stream behaves towards its client. */
export interface SseOptions {
  /** A `: ping` comment this often keeps proxies with short read timeouts open. */
  readonly heartbeatMs: number;
  /** Unsent bytes allowed before a slow client is cut off (it resumes with Last-Event-ID). */
  readonly maxBufferBytes: number;
  /** Milliseconds until the caller's credential expires: the stream ends then. */
  readonly expiresInMs?: number;
}

/** Why a stream ended (logged; the client sees only the final comment and the end of the body). */
export type SseEnd = 'client_left' | 'slow_client' | 'expired' | 'shutdown' | 'feed_ended';

// setTimeout holds at most ~24.8 days.
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Streams a feed to the client until either side ends. Events are written as they come; when the
 * client does not read and its unsent bytes pass `maxBufferBytes`, the stream ends cleanly (what
 * was already written still reaches it), so memory stays bounded and the client reconnects with
 * `Last-Event-ID`, losing and repeating nothing. The server-side consumer goes with the stream.
 */
export function pipeFeed(feed: ConversationFeed, res: Response, o: SseOptions, onEnd: (why: SseEnd, err?: unknown) => void): { stop: () => Promise<void>; finished: Promise<void> } {
  res.statusCode = 200;
  // setHeader, not Express's res.set, which would append a charset to the type.
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache');
  // The connection serves this stream only: closing it with the stream lets shutdown finish at once.
  res.setHeader('Connection', 'close');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.write(': connected\n\n');

  let ended: SseEnd | undefined;
  const ping = setInterval(() => res.write(': ping\n\n'), o.heartbeatMs);
  const expiry = o.expiresInMs === undefined ? undefined : setTimeout(() => void stop('expired'), Math.max(0, Math.min(o.expiresInMs, MAX_TIMER_MS)));
  const stop = async (why: SseEnd = 'shutdown', err?: unknown) => {
    if (ended) return;
    ended = why;
    clearInterval(ping);
    if (expiry) clearTimeout(expiry);
    await feed.close();
    if (!res.destroyed) {
      // A comment says why; EventSource ignores it and reconnects with Last-Event-ID.
      if (why === 'slow_client') res.write(': slow client, reconnect with Last-Event-ID\n\n');
      if (why === 'expired') res.write(': credential expired\n\n');
    }
    res.end();
    onEnd(why, err);
  };
  // `res` (not `req`) closes when the client goes away; `req` may close as soon as it is read.
  res.on('close', () => void stop('client_left'));
  if (res.destroyed) void stop('client_left'); // the client left while the feed was opening

  const finished = (async () => {
    // Stopping from inside the loop would deadlock (closing the feed waits for its iterator to
    // finish): leave the loop first, then stop.
    let why: SseEnd = 'feed_ended';
    let failure: unknown;
    try {
      for await (const e of feed.events) {
        if (ended) break;
        // Checked before writing, so one large event never cuts off a client that keeps up, and the
        // event not written is the first one the client gets when it resumes.
        if (res.writableLength > o.maxBufferBytes) {
          why = 'slow_client';
          break;
        }
        res.write(formatSse(e));
      }
    } catch (e) {
      failure = e;
    } finally {
      // Also when the feed ended by itself (NATS went away): end the response so the client reconnects.
      await stop(why, ended ? undefined : failure);
    }
  })();
  return { stop: () => stop('shutdown'), finished };
}
