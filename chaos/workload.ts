/**
 * Load for the chaos suite: commands that write a known pattern (so every byte can be checked), the
 * HTTP calls a client makes (retried with an Idempotency-Key so a fault never makes two tasks), and
 * the round-trip probe that measures recovery.
 */
import { createHash } from 'node:crypto';
import { sleep } from './infra';

export const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/** A command whose output is known in advance: `lines` lines of 64 bytes, `perTick` at a time every `intervalMs`, then `exit <code>`. */
export interface Generator {
  readonly tag: string;
  readonly lines: number;
  readonly perTick: number;
  readonly intervalMs: number;
  readonly exitCode: number;
}

/** How long a generator runs (without the spawn), in ms. */
export const durationMs = (g: Omit<Generator, 'tag'>) => Math.ceil(g.lines / g.perTick) * g.intervalMs;

export function generatorCommand(g: Generator): string {
  const sleepS = (g.intervalMs / 1000).toFixed(3);
  // printf pads the line to 64 bytes: "<tag> <index, 6 digits> <filler>\n".
  return `i=0; while [ $i -lt ${g.lines} ]; do i=$((i+1)); printf '%s %06d %s\\n' '${g.tag}' $i '${filler(g.tag)}'; if [ $((i % ${g.perTick})) -eq 0 ]; then sleep ${sleepS}; fi; done; exit ${g.exitCode}`;
}

function filler(tag: string): string {
  return 'x'.repeat(Math.max(1, 64 - tag.length - 1 - 6 - 1 - 1));
}

export function expectedOutput(g: Generator): Buffer {
  const parts: string[] = [];
  for (let i = 1; i <= g.lines; i++) parts.push(`${g.tag} ${String(i).padStart(6, '0')} ${filler(g.tag)}\n`);
  return Buffer.from(parts.join(''));
}

export const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** The answer to an HTTP call; `json` is whatever the API returned. */
export interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
  headers: Headers;
}

/** A client of the public API as one user (an HTTP client would do the same). */
export class Client {
  constructor(
    readonly baseUrl: string,
    readonly token: string,
    readonly user: string,
    readonly tenant: string,
  ) {}

  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, timeoutMs = 15_000): Promise<Reply> {
    const r = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
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

  /** Retries through faults (network errors, 5xx) with the same Idempotency-Key until `deadlineMs`. */
  async reliably(method: string, path: string, body: unknown, key: string, deadlineMs = 120_000): Promise<Reply> {
    const end = Date.now() + deadlineMs;
    let last = 'no answer';
    for (;;) {
      try {
        const r = await this.call(method, path, body, { 'idempotency-key': key });
        if (r.status < 500 && r.status !== 429) return r;
        last = `${r.status} ${JSON.stringify(r.json)}`;
      } catch (e) {
        last = (e as Error).message;
      }
      if (Date.now() > end) throw new Error(`${method} ${path} kept failing: ${last}`);
      await sleep(300);
    }
  }

  async conversation(title: string): Promise<string> {
    const r = await this.reliably('POST', '/v1/conversations', { title }, `conv:${this.user}:${title}`);
    if (r.status !== 201) throw new Error(`conversation not created: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json.id as string;
  }

  async task(taskId: string): Promise<Reply> {
    return this.call('GET', `/v1/tasks/${taskId}`);
  }

  /** All output from offset 0, following X-Next-Offset; `complete` is the last answer's X-Output-Complete. */
  async output(taskId: string): Promise<{ bytes: Buffer; complete: boolean; resultState: string | null }> {
    const parts: Buffer[] = [];
    let offset = 0;
    for (let i = 0; i < 10_000; i++) {
      const r = await fetch(`${this.baseUrl}/v1/tasks/${taskId}/output?offset=${offset}`, { headers: { authorization: `Bearer ${this.token}` }, signal: AbortSignal.timeout(15_000) });
      if (r.status !== 200) throw new Error(`output of ${taskId} answered ${r.status}`);
      const b = Buffer.from(await r.arrayBuffer());
      parts.push(b);
      const next = Number(r.headers.get('x-next-offset'));
      if (b.length === 0 || next === offset) return { bytes: Buffer.concat(parts), complete: r.headers.get('x-output-complete') === 'true', resultState: r.headers.get('x-result-state') };
      offset = next;
    }
    throw new Error(`output of ${taskId} never ended`);
  }
}

/** A task the suite launched, with what it must end as. */
export interface Launched {
  readonly taskId: string;
  readonly commandId: string;
  readonly conversationId: string;
  readonly client: Client;
  readonly gen: Generator;
  readonly launchedAt: number;
  /** The scenario that launched it (for the report). */
  readonly scenario: string;
  /** Stopped on purpose: must end cancelled, and its bytes so far must be an exact prefix. */
  stopped?: boolean;
  /** Ran on a runner removed for good: may end lost with a durable prefix, never succeeded with less. */
  mayBeLost?: boolean;
  /** Must end as its command did: a stop aimed at another task (or a foreign or stale stop) must not touch it. */
  mustNotStop?: boolean;
  /** When the clock for "stuck" starts if later than its command's end (the heal of a cut, the loss of a host). */
  settleFrom?: number;
}

let seq = 0;

/** Starts a generator as a person's command in `conversationId`, retrying through faults. */
export async function launch(client: Client, conversationId: string, scenario: string, g: Omit<Generator, 'tag'>): Promise<Launched> {
  const tag = `${scenario.slice(0, 6)}-${process.pid}-${++seq}`;
  const gen: Generator = { ...g, tag };
  const r = await client.reliably('POST', `/v1/conversations/${conversationId}/commands`, { command: generatorCommand(gen) }, `cmd:${tag}`);
  if (r.status !== 201) throw new Error(`command not started: ${r.status} ${JSON.stringify(r.json)}`);
  return { taskId: r.json.taskId, commandId: r.json.commandId, conversationId, client, gen, launchedAt: Date.now(), scenario };
}

/** Waits until the task is terminal (or `timeoutMs` passes); answers its last view, or null when never read. */
export async function settle(t: Launched, timeoutMs: number): Promise<Record<string, unknown> | null> {
  const end = Date.now() + timeoutMs;
  let last: Record<string, unknown> | null = null;
  for (;;) {
    const r = await t.client.task(t.taskId).catch(() => null);
    if (r?.status === 200) {
      last = r.json;
      if (TERMINAL.has(String(r.json.status))) return last;
    }
    if (Date.now() > end) return last;
    await sleep(500);
  }
}

/** Probes that ended `succeeded` with other bytes than they wrote: false successes. */
export const probeFalseSuccesses: string[] = [];

/**
 * One command round trip through every service: start `printf`, wait for `succeeded` and its exact
 * bytes. Answers the milliseconds it took from `since`, retrying (with a new probe) until `timeoutMs`.
 * A probe may legitimately end `lost` while a runner is gone; it may never succeed with wrong bytes.
 */
export async function roundTrip(client: Client, conversationId: string, since: number, timeoutMs: number): Promise<number> {
  const end = since + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    const tag = `probe-${process.pid}-${++seq}`;
    try {
      const r = await client.call('POST', `/v1/conversations/${conversationId}/commands`, { command: `printf '%s\\n' ${tag}` }, { 'idempotency-key': `probe:${tag}` }, 10_000);
      if (r.status !== 201) {
        last = `start answered ${r.status}`;
        await sleep(250);
        continue;
      }
      const taskId = r.json.taskId as string;
      while (Date.now() < end) {
        const v = await client.task(taskId).catch(() => null);
        if (v?.status === 200 && TERMINAL.has(v.json.status)) {
          const out = await client.output(taskId).catch(() => null);
          const ok = out?.bytes.toString() === `${tag}\n`;
          if (v.json.status === 'succeeded' && ok) return Date.now() - since;
          if (v.json.status === 'succeeded' && out) probeFalseSuccesses.push(`${taskId}: succeeded with ${JSON.stringify(out.bytes.toString())}`);
          last = `probe ${taskId} ended ${v.json.status}`;
          break;
        }
        await sleep(100);
      }
    } catch (e) {
      last = (e as Error).message;
      await sleep(250);
    }
  }
  throw new Error(`no successful round trip within ${timeoutMs} ms (${last})`);
}
