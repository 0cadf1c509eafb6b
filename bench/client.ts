// What any HTTP client of the public API does, with arrival times: JSON calls, and one SSE stream
// per conversation whose events are stamped with performance.now() the moment they are parsed.
import { performance } from 'node:perf_hooks';
import { readSse } from '@handplane/testing';
import { Api } from '../e2e/client';

export { Api };

interface Arrival {
  at: number;
  data: Record<string, unknown>;
}

/**
 * Follows `url` as Server-Sent Events. `arrival(event, taskId)` resolves with the moment the first
 * such event for that task arrived, whether it came before or after the call.
 */
export function followSse(url: string, token: string) {
  const seen = new Map<string, Arrival>();
  const waiting = new Map<string, ((a: Arrival) => void)[]>();
  const ac = new AbortController();
  let opened!: () => void;
  const open = new Promise<void>((r) => (opened = r));
  const record = (event: string, data: Record<string, unknown>) => {
    const key = `${event}:${String(data.taskId ?? '')}`;
    if (seen.has(key)) return;
    const a = { at: performance.now(), data };
    seen.set(key, a);
    for (const w of waiting.get(key) ?? []) w(a);
    waiting.delete(key);
  };
  const done = (async () => {
    const r = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: ac.signal });
    if (r.status !== 200 || !r.body) throw new Error(`SSE answered ${r.status}`);
    opened();
    for await (const m of readSse(r.body)) {
      if (m.type === 'event' && m.event) record(m.event, m.data === undefined ? {} : (JSON.parse(m.data) as Record<string, unknown>));
    }
  })().catch((e: Error) => {
    if (e.name !== 'AbortError') throw e;
  });
  return {
    /** Resolves once the stream answered 200. */
    open,
    arrival(event: string, taskId: string, timeoutMs = 120_000): Promise<Arrival> {
      const key = `${event}:${taskId}`;
      const a = seen.get(key);
      if (a) return Promise.resolve(a);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${event} for ${taskId} within ${timeoutMs} ms`)), timeoutMs);
        const list = waiting.get(key) ?? [];
        list.push((x) => {
          clearTimeout(timer);
          resolve(x);
        });
        waiting.set(key, list);
      });
    },
    close: () => {
      ac.abort();
      return done;
    },
  };
}

let submitted = 0;
const runTag = `${process.pid}-${Date.now().toString(36)}`;

/**
 * POST …/commands with an Idempotency-Key, retried with the same key on 503 (the gateway answers it
 * when its read model is slower than its wait, as under heavy load); resolves once it answered 201.
 */
export async function submitCommand(api: Api, conversationId: string, command: string): Promise<{ taskId: string; commandId: string }> {
  const key = `bench-${runTag}-${++submitted}`;
  for (let attempt = 1; ; attempt++) {
    const r = await api.call('POST', `/v1/conversations/${conversationId}/commands`, { command }, { 'idempotency-key': key });
    if (r.status === 201) return r.json as { taskId: string; commandId: string };
    if (r.status !== 503 || attempt >= 10) throw new Error(`command answered ${r.status}: ${JSON.stringify(r.json)}`);
    await new Promise((res) => setTimeout(res, 200 * attempt));
  }
}

/** A conversation of the bench user with its SSE stream open. */
export async function benchConversation(baseUrl: string, token: string, title: string) {
  const api = new Api(baseUrl, token);
  const c = await api.call('POST', '/v1/conversations', { title });
  if (c.status !== 201) throw new Error(`create conversation answered ${c.status}: ${JSON.stringify(c.json)}`);
  const id = c.json.id as string;
  const sse = followSse(`${baseUrl}/v1/conversations/${id}/events`, token);
  await sse.open;
  return {
    id,
    api,
    sse,
    /** POST …/commands (retried like a client would, see `submitCommand`); resolves with the task. */
    command: (command: string) => submitCommand(api, id, command),
    async stop(taskId: string): Promise<void> {
      const r = await api.call('POST', `/v1/tasks/${taskId}/stop`, {});
      if (r.status !== 202) throw new Error(`stop answered ${r.status}: ${JSON.stringify(r.json)}`);
    },
    close: () => sse.close(),
  };
}
