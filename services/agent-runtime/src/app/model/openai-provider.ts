import { Unavailable, ValidationError } from '@handplane/kernel';
import { toChatMessages } from './openai-messages';
import { TOOL_DEFINITIONS } from './tool-schemas';
import type { ModelProvider, ModelResponse, ToolCall, TranscriptEntry } from './transcript';

export interface OpenAiOptions {
  /** Base URL of an OpenAI-compatible server, e.g. `https://api.openai.com/v1`. */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly model: string;
  readonly timeoutMs: number;
  /** Attempts for transient failures (network, 429, 5xx). */
  readonly attempts?: number;
}

interface CallDelta {
  index?: number;
  id?: string;
  function?: { name?: string; arguments?: string };
}
interface Chunk {
  choices?: { delta?: { content?: string | null; tool_calls?: CallDelta[] }; message?: { content?: string | null; tool_calls?: CallDelta[] } }[];
  error?: { message?: string };
}

/** Accumulates a streamed (or whole) completion: text, and tool calls assembled from their deltas by index. */
class Assembly {
  text = '';
  readonly calls = new Map<number, { id: string; name: string; args: string }>();

  add(chunk: Chunk): void {
    if (chunk.error) throw new Unavailable(`the model server reported an error: ${chunk.error.message ?? 'unknown'}`);
    const choice = chunk.choices?.[0];
    const part = choice?.delta ?? choice?.message;
    if (!part) return;
    if (part.content) this.text += part.content;
    (part.tool_calls ?? []).forEach((d, k) => {
      const index = d.index ?? k;
      const c = this.calls.get(index) ?? { id: '', name: '', args: '' };
      if (d.id) c.id = d.id;
      if (d.function?.name) c.name += d.function.name;
      if (d.function?.arguments) c.args += d.function.arguments;
      this.calls.set(index, c);
    });
  }

  /** The response; call ids are made unique within the transcript (servers may repeat or omit them). */
  response(used: ReadonlySet<string>, step: number): ModelResponse {
    const taken = new Set(used);
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => {
        let callId = c.id || `call-${step}-${index}`;
        while (taken.has(callId)) callId = `${callId}-${step}`;
        taken.add(callId);
        return { callId, name: c.name, args: parseArgs(c.args) };
      });
    return { toolCalls, ...(this.text ? { text: this.text } : {}) };
  }
}

function parseArgs(raw: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(raw || '{}');
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // answered below: the tool tells the model its arguments were not JSON
  }
  return { __invalid_json: raw };
}

/** Reads `data:` lines of a server-sent event stream until `[DONE]`. */
async function readStream(body: ReadableStream<Uint8Array>, into: Assembly): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (!line.startsWith('data:')) continue;
      const data = line.slice(5).trim();
      if (data === '[DONE]') return;
      if (data) into.add(JSON.parse(data) as Chunk);
    }
  }
}

async function complete(o: OpenAiOptions, transcript: readonly TranscriptEntry[], signal?: AbortSignal): Promise<ModelResponse> {
  const body = { model: o.model, messages: toChatMessages(transcript), tools: TOOL_DEFINITIONS, tool_choice: 'auto', parallel_tool_calls: true, stream: true };
  const timeout = AbortSignal.timeout(o.timeoutMs);
  let res: Response;
  try {
    res = await fetch(`${o.baseUrl.replace(/\/+$/, '')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', ...(o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {}) },
      body: JSON.stringify(body),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
  } catch (cause) {
    throw new Unavailable(`the model server did not answer: ${(cause as Error).message}`, { cause });
  }
  if (!res.ok) {
    const text = (await res.text().catch(() => '')).slice(0, 500);
    const message = `the model server answered ${res.status}: ${text}`;
    if (res.status === 429 || res.status >= 500) throw new Unavailable(message);
    throw new ValidationError(message); // a bad key, model or request does not heal by retrying
  }
  const a = new Assembly();
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream') && res.body) await readStream(res.body, a);
  else a.add((await res.json()) as Chunk);
  const used = new Set(transcript.flatMap((e) => (e.kind === 'assistant' ? e.toolCalls.map((c) => c.callId) : [])));
  return a.response(used, transcript.filter((e) => e.kind === 'assistant').length);
}

/**
 * A model provider for any OpenAI-compatible chat-completions server: function tools, parallel
 * tool calls, streaming (`data:` chunks with tool-call deltas). Transient failures are retried;
 * a refused request (bad key, unknown model) fails the run with the server's message.
 */
export function openAiProvider(o: OpenAiOptions): ModelProvider {
  const attempts = o.attempts ?? 3;
  return {
    async next(transcript, signal) {
      for (let attempt = 1; ; attempt++) {
        try {
          return await complete(o, transcript, signal);
        } catch (e) {
          if (!(e instanceof Unavailable) || attempt >= attempts || signal?.aborted) throw e;
          await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
        }
      }
    },
  };
}
