import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fake server received. */
export interface SeenRequest {
  readonly headers: IncomingMessage['headers'];
  readonly body: {
    model: string;
    stream?: boolean;
    parallel_tool_calls?: boolean;
    tools: { function: { name: string } }[];
    messages: { role: string; content?: string | null; tool_call_id?: string; tool_calls?: { id: string; function: { name: string; arguments: string } }[] }[];
  };
}

/** A planned answer: tool calls and/or text, or an HTTP error. */
export type Reply = { toolCalls?: { id: string; name: string; args: unknown }[]; text?: string } | { status: number; error: string };

/**
 * A chat-completions server speaking the OpenAI streaming protocol on 127.0.0.1:0: `data:` chunks
 * with content deltas and tool-call deltas (ids and names first, arguments cut into pieces in later
 * chunks, parallel calls interleaved by index), then `data: [DONE]`.
 */
export class FakeOpenAi {
  readonly requests: SeenRequest[] = [];
  private server?: Server;

  constructor(private readonly reply: (req: SeenRequest, n: number) => Reply) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (d: Buffer) => (raw += d.toString()));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
          res.writeHead(404).end();
          return;
        }
        const seen: SeenRequest = { headers: req.headers, body: JSON.parse(raw) as SeenRequest['body'] };
        this.requests.push(seen);
        const r = this.reply(seen, this.requests.length);
        if ('status' in r) {
          res.writeHead(r.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: r.error } }));
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        for (const chunk of chunks(r)) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  async stop(): Promise<void> {
    await new Promise((r) => this.server?.close(r));
  }
}

const delta = (d: unknown) => ({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: d, finish_reason: null }] });

function chunks(r: { toolCalls?: { id: string; name: string; args: unknown }[]; text?: string }): unknown[] {
  const out: unknown[] = [delta({ role: 'assistant', content: '' })];
  if (r.text) for (const piece of r.text.match(/.{1,4}/gs) ?? []) out.push(delta({ content: piece }));
  const calls = r.toolCalls ?? [];
  calls.forEach((c, index) => out.push(delta({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] })));
  // Arguments arrive in small pieces, the calls' pieces interleaved.
  const pieces = calls.map((c) => JSON.stringify(c.args).match(/.{1,7}/gs) ?? []);
  for (let k = 0; pieces.some((p) => k < p.length); k++) {
    pieces.forEach((p, index) => k < p.length && out.push(delta({ tool_calls: [{ index, function: { arguments: p[k] } }] })));
  }
  out.push({ id: 'chatcmpl-1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: calls.length ? 'tool_calls' : 'stop' }] });
  return out;
}
