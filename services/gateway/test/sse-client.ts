import { request } from 'node:http';
import { SseParser } from '@handplane/testing';

/** One parsed Server-Sent Event. */
export interface SseEvent {
  id: string;
  event: string;
  data: unknown;
}

/** An open event stream: what arrived so far, and how it ended. */
export interface SseStream {
  readonly status: Promise<number>;
  readonly events: SseEvent[];
  readonly comments: string[];
  /** Resolves when the server ends the stream (or `close()` is called). */
  readonly ended: Promise<void>;
  readonly body: () => string;
  /** Stops reading without closing (a slow client); `resume()` reads on. */
  pause(): void;
  resume(): void;
  close(): void;
}

/**
 * A small SSE client over node:http (so a test can pause reading like a slow client). `auth` is a
 * bearer token (sent as a header) or null (a ticket in the path, like EventSource).
 */
export function openSse(baseUrl: string, path: string, auth: string | null, headers: Record<string, string> = {}): SseStream {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let raw = '';
  const parser = new SseParser();
  let setStatus!: (s: number) => void;
  let setEnded!: () => void;
  const status = new Promise<number>((r) => (setStatus = r));
  const ended = new Promise<void>((r) => (setEnded = r));
  const req = request(`${baseUrl}${path}`, { headers: { accept: 'text/event-stream', ...(auth ? { authorization: `Bearer ${auth}` } : {}), ...headers } }, (res) => {
    setStatus(res.statusCode ?? 0);
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      raw += chunk;
      for (const m of parser.push(chunk)) {
        if (m.type === 'comment') comments.push(m.line);
        else if (m.event) events.push({ id: m.id, event: m.event, data: m.data === undefined ? undefined : JSON.parse(m.data) } as SseEvent);
      }
    });
    res.on('end', setEnded);
    res.on('close', setEnded);
    paused = res;
  });
  let paused: import('node:http').IncomingMessage | undefined;
  req.on('error', () => {
    setStatus(0);
    setEnded();
  });
  req.end();
  return {
    status,
    events,
    comments,
    ended,
    body: () => raw,
    pause: () => paused?.pause(),
    resume: () => paused?.resume(),
    close: () => req.destroy(),
  };
}
