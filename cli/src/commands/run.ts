import { randomUUID } from 'node:crypto';
import { intOption, option, parseArgs } from '../args';
import type { Task } from '../api';
import type { Context } from '../context';
import { exitCodeOf, followOutput } from '../follow';
import { UsageError } from '../io';

const SAFE = /^[A-Za-z0-9_./:=@%+-]+$/;
/** Quotes one word for a POSIX shell. */
export const shellQuote = (w: string) => (SAFE.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

/**
 * The command string: one argument is a shell command as is (`run -- 'make && make test'`);
 * several are words, quoted so the shell sees them as given (`run -- echo "a b"`).
 */
export function commandOf(words: string[]): string {
  if (words.length === 1) return words[0]!;
  return words.map(shellQuote).join(' ');
}

function parseEnv(entries: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of entries) {
    const i = e.indexOf('=');
    if (i <= 0) throw new UsageError(`--env wants NAME=VALUE, got ${JSON.stringify(e)}`);
    env[e.slice(0, i)] = e.slice(i + 1);
  }
  return env;
}

/**
 * `handplane run [--conversation C] [--cwd DIR] [--env K=V]… [--timeout-ms N] -- <command>`: runs a
 * command as a person (no model), streams its output to stdout as it becomes durable, and exits
 * with the command's exit code. Ctrl-C asks the gateway to stop the task (twice: leave at once).
 */
export async function runCommand(ctx: Context, argv: string[]): Promise<number> {
  const a = parseArgs(argv, { flags: [], options: ['conversation', 'cwd', 'env', 'timeout-ms'] });
  if (a.positionals.length === 0) throw new UsageError('usage: handplane run [--conversation ID] [--cwd DIR] [--env NAME=VALUE]… [--timeout-ms N] -- <command…>');
  const api = ctx.api();
  const timeoutMs = intOption(a, 'timeout-ms');
  const cwd = option(a, 'cwd');
  const env = parseEnv(a.options.get('env') ?? []);
  const body = { command: commandOf(a.positionals), ...(cwd ? { cwd } : {}), ...(Object.keys(env).length ? { env } : {}), ...(timeoutMs ? { timeoutMs } : {}) };

  const conversationId = option(a, 'conversation') ?? (await api.json<{ id: string }>('POST', '/v1/conversations', { title: 'handplane run' }, { 'idempotency-key': randomUUID() })).id;
  const { taskId } = await api.json<{ taskId: string }>('POST', `/v1/conversations/${encodeURIComponent(conversationId)}/commands`, body, { 'idempotency-key': randomUUID() });
  if (!ctx.json) ctx.note(`task ${taskId} in conversation ${conversationId}`);

  const stopper = new AbortController();
  let interrupts = 0;
  const unsubscribe = ctx.io.onInterrupt(() => {
    if (++interrupts > 1) stopper.abort();
    else {
      ctx.note(`stopping task ${taskId} (Ctrl-C again to leave it running)`);
      void api.json('POST', `/v1/tasks/${encodeURIComponent(taskId)}/stop`, {}).catch((e: Error) => ctx.note(`stop failed: ${e.message}`));
    }
  });
  const chunks: Uint8Array[] = [];
  let followed: { task: Task; complete: boolean };
  try {
    followed = await followOutput(api, taskId, {
      write: (bytes) => (ctx.json ? chunks.push(bytes) : ctx.io.out(bytes)),
      progress: (text) => ctx.note(text),
      progressEveryMs: ctx.progressEveryMs,
      signal: stopper.signal,
    });
  } finally {
    unsubscribe();
  }
  if (stopper.signal.aborted) return 130;
  const { task, complete } = followed;
  if (!complete) ctx.note(`the output of task ${taskId} is incomplete (result ${task.resultState}); what was kept is shown`);
  const code = exitCodeOf(task);
  if (ctx.json) {
    const output = Buffer.concat(chunks);
    ctx.io.out(`${JSON.stringify({ conversationId, task, exitCode: code, outputComplete: complete, output: output.toString('utf8') }, null, 2)}\n`);
  } else if (task.status !== 'succeeded') {
    ctx.note(`task ${taskId} ${task.status}${task.exitCode !== null ? ` with exit code ${task.exitCode}` : ''}${task.signal ? ` by ${task.signal}` : ''}`);
  }
  return code;
}
