/** A tiny API client and SSE reader for the e2e tests (what any HTTP client would do). */
import { readSse } from '@handplane/testing';

export interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

export class Api {
  private readonly bases: readonly string[];
  private turn = 0;

  /** With several gateway instances, each request goes to the next one in turn. */
  constructor(base: string | readonly string[], private readonly token: string) {
    this.bases = typeof base === 'string' ? [base] : base;
  }

  private get baseUrl(): string {
    return this.bases[this.turn++ % this.bases.length]!;
  }

  // The answer's JSON is whatever the API returned: tests assert on its shape, so it is typed loosely.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
    const r = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await r.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = text;
    }
    return { status: r.status, json, headers: r.headers };
  }

  /** Reads all output of a task from offset 0, following X-Next-Offset. */
  async output(taskId: string): Promise<{ bytes: Buffer; headers: Headers }> {
    const parts: Buffer[] = [];
    let offset = 0;
    for (;;) {
      const r = await fetch(`${this.baseUrl}/v1/tasks/${taskId}/output?offset=${offset}`, { headers: { authorization: `Bearer ${this.token}` } });
      if (r.status !== 200) throw new Error(`output answered ${r.status}: ${await r.text()}`);
      const b = Buffer.from(await r.arrayBuffer());
      parts.push(b);
      const next = Number(r.headers.get('x-next-offset'));
      if (b.length === 0 || next === offset) return { bytes: Buffer.concat(parts), headers: r.headers };
      offset = next;
    }
  }

  /** Follows the conversation's SSE stream, collecting events until `close()`. */
  events(conversationId: string, after?: number): { events: SseEvent[]; close: () => void; done: Promise<void> } {
    const events: SseEvent[] = [];
    const ac = new AbortController();
    const done = (async () => {
      const r = await fetch(`${this.baseUrl}/v1/conversations/${conversationId}/events${after !== undefined ? `?after=${after}` : ''}`, {
        headers: { authorization: `Bearer ${this.token}`, accept: 'text/event-stream' },
        signal: ac.signal,
      });
      if (r.status !== 200 || !r.body) throw new Error(`SSE answered ${r.status}`);
      for await (const m of readSse(r.body)) {
        if (m.type === 'event' && m.event) events.push({ id: m.id === undefined ? undefined : Number(m.id), event: m.event, data: m.data === undefined ? undefined : JSON.parse(m.data) } as SseEvent);
      }
    })().catch((e) => {
      if ((e as Error).name !== 'AbortError') throw e;
    });
    return { events, close: () => ac.abort(), done };
  }
}
