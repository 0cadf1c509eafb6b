import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import { parseArgs } from '../args';
import type { StreamEvent } from '../api';
import type { Context } from '../context';
import { summarize } from '../format';
import { UsageError } from '../io';
import { renderEvent } from './chat-render';

interface ConversationView {
  run: { status: string };
  queue: unknown[];
  approvals: { approvalId: string }[];
  questions: { questionId: string }[];
}

const HELP = `commands: /approve <id>  /reject <id>  /answer <id> <text>  /stop <taskId>  /stop-all  /quit
a plain line is a message to the agent (or the answer, while a question is open)\n`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `handplane chat [conversation] [--no-wait]`: talk to the agent. Lines from stdin are messages
 * (or slash commands); the conversation's events stream to stdout as they happen. When stdin ends
 * the chat waits until the agent is idle (`--no-wait`: leaves at once).
 */
export async function chatCommand(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: ['no-wait'], options: [] });
  if (a.positionals.length > 1) throw new UsageError('usage: handplane chat [conversation] [--no-wait]');
  const api = ctx.api();
  const conversationId = a.positionals[0] ?? (await api.json<{ id: string }>('POST', '/v1/conversations', { title: 'handplane chat' }, { 'idempotency-key': randomUUID() })).id;
  ctx.note(`conversation ${conversationId}${ctx.io.interactive ? ' (/help for commands)' : ''}`);

  const stream = new AbortController();
  // What we sent (messages, answers, decisions) until the stream shows it; then its sequence counts.
  // (The stream may show it before the POST answers, so every such event is remembered.)
  const seen = new Map<string, number>();
  const mine = new Set<string>();
  let lastFinished = 0; // sequence of the latest run.finished
  let openQuestion: string | undefined;
  let failure: Error | undefined;

  const reader = (async () => {
    try {
      for await (const e of api.events(conversationId, stream.signal)) {
        const key = ackKey(e);
        if (key) seen.set(key, e.id);
        if (e.event === 'run.finished') lastFinished = e.id;
        if (e.event === 'question.asked') openQuestion = String(e.data.questionId);
        if (e.event === 'question.answered' && openQuestion === e.data.questionId) openQuestion = undefined;
        show(ctx, e);
      }
    } catch (e) {
      failure = e as Error;
      stream.abort();
    }
  })();

  const expect = (key: string) => void mine.add(key);
  /** All we sent is in the stream and a run finished after the last of it. */
  const answered = () => {
    let last = 0;
    for (const k of mine) {
      const seq = seen.get(k);
      if (seq === undefined) return false;
      last = Math.max(last, seq);
    }
    return lastFinished > last;
  };
  const post = async (text: string) => {
    const r = await api.json<{ messageId: string }>('POST', `/v1/conversations/${encodeURIComponent(conversationId)}/messages`, { text, clientMessageId: randomUUID() });
    expect(`message:${r.messageId}`);
  };
  const answer = async (questionId: string, text: string) => {
    await api.json('POST', `/v1/conversations/${encodeURIComponent(conversationId)}/questions/${encodeURIComponent(questionId)}/answer`, { text });
    expect(`question:${questionId}`);
  };

  const handle = async (line: string): Promise<'quit' | void> => {
    const text = line.trim();
    if (!text) return;
    const [cmd, id, ...rest] = text.split(/\s+/);
    const path = `/v1/conversations/${encodeURIComponent(conversationId)}`;
    switch (cmd) {
      case '/quit':
      case '/exit':
        return 'quit';
      case '/help':
        ctx.io.err(HELP);
        return;
      case '/approve':
      case '/reject':
        if (!id) return void ctx.note(`usage: ${cmd} <approvalId>`);
        await api.json('POST', `${path}/approvals/${encodeURIComponent(id)}`, { decision: cmd === '/approve' ? 'approve' : 'reject' });
        expect(`approval:${id}`);
        return;
      case '/answer':
        if (!id || rest.length === 0) return void ctx.note('usage: /answer <questionId> <text>');
        await answer(id, text.slice(text.indexOf(id) + id.length).trim());
        return;
      case '/stop':
        if (!id) return void ctx.note('usage: /stop <taskId>');
        await api.json('POST', `/v1/tasks/${encodeURIComponent(id)}/stop`, {});
        return;
      case '/stop-all':
        ctx.note(`stop-all: ${JSON.stringify(await api.json('POST', `${path}/stop-all`, {}))}`);
        return;
      default:
        if (text.startsWith('/')) return void ctx.note(`unknown command ${cmd}; /help lists them`);
        if (openQuestion) await answer(openQuestion, line);
        else await post(line);
    }
  };

  let quit = false;
  const unsubscribe = ctx.io.onInterrupt(() => {
    quit = true;
    stream.abort();
  });
  try {
    const rl = createInterface({ input: ctx.io.stdin, terminal: false });
    for await (const line of rl) {
      if (failure || quit) break;
      try {
        if ((await handle(line)) === 'quit') {
          quit = true;
          break;
        }
      } catch (e) {
        ctx.note((e as Error).message);
      }
    }
    rl.close();
    // Done when the stream showed all we sent, a run finished after it, and nothing runs or waits in line.
    if (!quit && !failure && !a.flags.has('no-wait') && mine.size > 0) await untilIdle(ctx, conversationId, answered, () => failure !== undefined || quit);
  } finally {
    unsubscribe();
    stream.abort();
    await reader;
  }
  if (failure) throw failure;
  return 0;
}

/** Waits until the agent answered our last message and nothing is running or queued, with progress. */
async function untilIdle(ctx: Context, conversationId: string, answered: () => boolean, abandoned: () => boolean): Promise<void> {
  const started = Date.now();
  let lastProgress = started;
  for (;;) {
    if (abandoned()) return;
    if (answered()) {
      const v = await ctx.api().json<ConversationView>('GET', `/v1/conversations/${encodeURIComponent(conversationId)}`);
      if (v.run.status === 'idle' && v.queue.length === 0) return;
      if (v.approvals.length || v.questions.length) {
        ctx.note('the agent is waiting for an answer and stdin is closed; leaving');
        return;
      }
    }
    if (Date.now() - lastProgress >= ctx.progressEveryMs) {
      lastProgress = Date.now();
      ctx.note(`waiting for the agent (${Math.round((lastProgress - started) / 1000)} s)`);
    }
    await sleep(200);
  }
}

/** The key under which we wait for an event we caused. */
function ackKey(e: StreamEvent): string | undefined {
  if (e.event === 'message.user') return `message:${String(e.data.messageId)}`;
  if (e.event === 'question.answered') return `question:${String(e.data.questionId)}`;
  if (e.event === 'approval.resolved') return `approval:${String(e.data.approvalId)}`;
  return undefined;
}

function show(ctx: Context, e: StreamEvent): void {
  if (ctx.json) {
    ctx.io.out(`${JSON.stringify({ id: e.id, event: e.event, data: e.data })}\n`);
    return;
  }
  const text = renderEvent(e);
  if (text !== undefined) ctx.io.out(text);
  else if (!['conversation.created', 'member.added'].includes(e.event)) ctx.io.out(`  · ${e.event}: ${summarize(e.event, e.data)}\n`);
}
