/**
 * SSE clients for the chaos suite: one that is dropped every few seconds and resumes with
 * Last-Event-ID (as browsers do), and one clean read used as the reference afterwards.
 */
import { readSse } from '@handplane/testing';
import { sleep } from './infra';
import type { Client } from './workload';

export interface SseEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

/** Reads the stream from `after` until `stop()` resolves, the server ends it, or it fails; answers what arrived. */
async function readStream(client: Client, conversationId: string, after: number | null, signal: AbortSignal, onEvent: (e: SseEvent) => void): Promise<void> {
  const headers: Record<string, string> = { authorization: `Bearer ${client.token}`, accept: 'text/event-stream' };
  if (after !== null) headers['last-event-id'] = String(after);
  const r = await fetch(`${client.baseUrl}/v1/conversations/${conversationId}/events`, { headers, signal });
  if (r.status !== 200 || !r.body) throw Object.assign(new Error(`SSE answered ${r.status}`), { status: r.status });
  for await (const m of readSse(r.body)) {
    if (m.type === 'event' && m.event && m.id !== undefined) onEvent({ id: Number(m.id), event: m.event, data: m.data === undefined ? undefined : JSON.parse(m.data) });
  }
}

/** A client cut off every `dropEveryMs` (and by every fault), always resuming after the last id it saw. */
export class DroppingSse {
  readonly events: SseEvent[] = [];
  drops = 0;
  reconnects = 0;
  /** Answers other than 200 (a 404 for the owner would be a finding; 5xx during faults are retried). */
  readonly refusals: string[] = [];
  private stopped = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly client: Client,
    private readonly conversationId: string,
    private readonly dropEveryMs: number,
  ) {}

  start(): void {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      const ac = new AbortController();
      const last = this.events.length ? this.events[this.events.length - 1]!.id : null;
      const timer = setTimeout(() => {
        this.drops++;
        ac.abort();
      }, this.dropEveryMs * (0.5 + Math.random()));
      try {
        this.reconnects++;
        await readStream(this.client, this.conversationId, last, ac.signal, (e) => this.events.push(e));
      } catch (e) {
        const status = (e as { status?: number }).status;
        if (status !== undefined && status < 500) this.refusals.push(`SSE answered ${status}`);
      } finally {
        clearTimeout(timer);
      }
      if (!this.stopped) await sleep(100);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }
}

/** Everything from the beginning up to and including id `upTo`, in one uninterrupted read. */
export async function readAll(client: Client, conversationId: string, upTo: number, timeoutMs = 30_000): Promise<SseEvent[]> {
  const events: SseEvent[] = [];
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  try {
    await readStream(client, conversationId, null, ac.signal, (e) => {
      events.push(e);
      if (e.id >= upTo) ac.abort();
    });
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  } finally {
    clearTimeout(timer);
  }
  return events;
}
