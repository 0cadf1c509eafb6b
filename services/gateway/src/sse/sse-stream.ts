import type { Response } from 'express';
import type { ConversationFeed, FeedEvent } from '../app/event-feed';

/** Formats one event; JSON never contains a raw newline, so `data` is one line. */
export function formatSse(e: FeedEvent): string {
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data ?? null)}\n\n`;
}

/**
 * Streams a feed to the client until either side ends: a `: ping` comment every `heartbeatMs`
 * keeps proxies with short read timeouts open; a slow client is waited for (`drain`), never
 * buffered without bound; the consumer is removed as soon as the client leaves.
 */
export function pipeFeed(feed: ConversationFeed, res: Response, heartbeatMs: number, onError: (e: unknown) => void): { stop: () => Promise<void>; finished: Promise<void> } {
  res.statusCode = 200;
  // setHeader, not Express's res.set, which would append a charset to the type.
  res.setHeader('Content-Type', 'text/event-stream');
  res.setHeader('Cache-Control', 'no-cache');
  // The connection serves this stream only: closing it with the stream lets shutdown finish at once.
  res.setHeader('Connection', 'close');
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  res.write(': connected\n\n');

  let ended = false;
  const ping = setInterval(() => res.write(': ping\n\n'), heartbeatMs);
  const stop = async () => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    await feed.close();
    res.end();
  };
  // `res` (not `req`) closes when the client goes away; `req` may close as soon as it is read.
  res.on('close', () => void stop());
  if (res.destroyed) void stop(); // the client left while the feed was opening

  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });

  const finished = (async () => {
    try {
      for await (const e of feed.events) {
        if (ended) break;
        if (!res.write(formatSse(e))) await drained();
      }
    } catch (e) {
      if (!ended) onError(e);
    } finally {
      // The feed ended by itself (NATS went away): end the response so the client reconnects.
      await stop();
    }
  })();
  return { stop, finished };
}
