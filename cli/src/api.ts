import type { TaskView } from '@handplane/contracts';
/** An error answer of the API (`{error: {code, message}}`) or a failure to reach it. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** A task as the API shows it (DESIGN.md §7; the shape is shared through libs/contracts). */
export type Task = TaskView;

/** A slice of a task's output. */
export interface OutputSlice {
  bytes: Uint8Array;
  nextOffset: number;
  resultState: string;
  complete: boolean;
}

/** One Server-Sent Event of a conversation. */
export interface StreamEvent {
  id: number;
  event: string;
  data: Record<string, unknown>;
}

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** The Handplane HTTP API, as the CLI uses it. */
export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
    private readonly note: (text: string) => void = () => undefined,
  ) {}

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  private async send(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> {
    // A rate-limited request waits as told and tries again (a few times), saying so.
    for (let attempt = 1; ; attempt++) {
      let r: Response;
      try {
        r = await fetch(`${this.baseUrl}${path}`, {
          method,
          headers: this.headers({ ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }),
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (e) {
        throw new ApiError(0, 'unreachable', `cannot reach ${this.baseUrl}: ${(e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message}`);
      }
      if (r.status !== 429 || attempt >= 4) return r;
      const wait = Math.min(60, Number(r.headers.get('retry-after')) || 1);
      this.note(`rate limited; retrying in ${wait} s`);
      await r.arrayBuffer();
      await sleep(wait * 1000);
    }
  }

  private async fail(r: Response): Promise<never> {
    const text = await r.text();
    let code = `http_${r.status}`;
    let message = text || r.statusText;
    try {
      const e = (JSON.parse(text) as { error?: { code?: string; message?: string } }).error;
      if (e?.code) code = e.code;
      if (e?.message) message = e.message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(r.status, code, message, Number(r.headers.get('retry-after')) || undefined);
  }

  /** A JSON call; 204 answers undefined. */
  async json<T>(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<T> {
    const r = await this.send(method, path, body, headers);
    if (!r.ok) return this.fail(r);
    if (r.status === 204) return undefined as T;
    return (await r.json()) as T;
  }

  /** Like `json`, also returning the response headers. */
  async jsonWithHeaders<T>(method: string, path: string): Promise<{ body: T; headers: Headers }> {
    const r = await this.send(method, path);
    if (!r.ok) return this.fail(r);
    return { body: (await r.json()) as T, headers: r.headers };
  }

  async output(taskId: string, offset: number): Promise<OutputSlice> {
    const r = await this.send('GET', `/v1/tasks/${encodeURIComponent(taskId)}/output?offset=${offset}`);
    if (!r.ok) return this.fail(r);
    return {
      bytes: new Uint8Array(await r.arrayBuffer()),
      nextOffset: Number(r.headers.get('x-next-offset')),
      resultState: r.headers.get('x-result-state') ?? 'result_pending',
      complete: r.headers.get('x-output-complete') === 'true',
    };
  }

  /**
   * The conversation's events, for as long as `signal` is not aborted. A dropped stream is resumed
   * with Last-Event-ID (the gateway ends streams of slow clients and at token expiry), so nothing
   * is lost or repeated; an error answer (401, 404) ends the iteration with an ApiError.
   */
  async *events(conversationId: string, signal: AbortSignal, after = 0): AsyncGenerator<StreamEvent> {
    let last = after;
    let failures = 0;
    while (!signal.aborted) {
      let r: Response;
      try {
        r = await fetch(`${this.baseUrl}/v1/conversations/${encodeURIComponent(conversationId)}/events`, {
          headers: this.headers({ accept: 'text/event-stream', ...(last > 0 ? { 'last-event-id': String(last) } : {}) }),
          signal,
        });
      } catch (e) {
        if (signal.aborted) return;
        if (++failures > 20) throw new ApiError(0, 'unreachable', `cannot reach ${this.baseUrl}: ${(e as Error).message}`);
        await sleep(Math.min(5000, 250 * failures), signal);
        continue;
      }
      if (!r.ok) return this.fail(r);
      failures = 0;
      try {
        for await (const e of parseSse(r.body!)) {
          last = e.id;
          yield e;
        }
      } catch (e) {
        if (signal.aborted) return;
        if ((e as Error).name !== 'TypeError' && (e as Error).name !== 'AbortError') throw e;
      }
      await sleep(200, signal); // the server ended the stream: resume where we were
    }
  }
}

/** Parses an SSE body into events (comments such as `: ping` are skipped). */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true });
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      let id = NaN;
      let event = '';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) id = Number(line.slice(4));
        else if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (event && Number.isSafeInteger(id)) yield { id, event, data: data ? (JSON.parse(data) as Record<string, unknown>) : {} };
    }
  }
}
