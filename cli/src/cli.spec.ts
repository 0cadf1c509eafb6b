import { createHmac } from 'node:crypto';
import { parseArgs } from './args';
import type { Task } from './api';
import { parseSse } from './api';
import { commandOf } from './commands/run';
import { signToken } from './commands/token';
import { exitCodeOf } from './follow';
import { summarize, table, taskDetails } from './format';
import { UsageError } from './io';
import { main, type Io } from './main';

const task = (over: Partial<Task>): Task => ({
  taskId: 't',
  commandId: 'c',
  conversationId: 'cv',
  userId: 'u',
  command: 'x',
  status: 'succeeded',
  background: false,
  attempt: 1,
  epoch: 1,
  exitCode: 0,
  signal: null,
  resultState: 'readable',
  outputBytes: 0,
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: null,
  finishedAt: null,
  deadlineAt: null,
  receipt: null,
  ...over,
});

function capture(env: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const io: Io = { out: (c) => void (out += Buffer.from(c).toString()), err: (t) => void (err += t), stdin: process.stdin, env, interactive: false, onInterrupt: () => () => undefined };
  return { io, out: () => out, err: () => err };
}

describe('handplane CLI (pure parts)', () => {
  it('shows a task’s receipt as its sentence and its evidence (issue 10.4)', () => {
    const receipt = {
      outcome: 'killed' as const,
      status: 'cancelled' as const,
      exitCode: null,
      signal: 'SIGTERM',
      requestedBy: { reason: 'user' as const, by: 'bob', at: '2026-01-01T00:00:02.000Z' },
      summary: 'killed by SIGTERM at the request of user bob',
      evidence: { runnerId: 'runner-a', epoch: 1, attempt: 1, startedAt: null, finishedAt: '2026-01-01T00:00:03.000Z', outputBytes: 5, resultState: 'readable' as const, exitReason: 'stopped' },
    };
    const text = taskDetails(task({ status: 'cancelled', receipt }));
    expect(text).toContain('receipt         killed by SIGTERM at the request of user bob\n');
    expect(text).toContain('  runnerId      runner-a\n');
    expect(text).not.toContain('[object Object]');
    expect(taskDetails(task({}))).toContain('receipt         -\n');
    expect(summarize('task.finished', { taskId: 't1', status: 'cancelled', exitCode: null, signal: 'SIGTERM', receipt })).toBe('t1 cancelled: killed by SIGTERM at the request of user bob');
  });

  it('parses options strictly and keeps everything after -- literal', () => {
    const a = parseArgs(['--env', 'A=1', '--env=B=2', '-fq', 'x', '--', '-la', '--json'], { flags: ['f', 'q'], options: ['env'] });
    expect([a.positionals, [...a.flags], a.options.get('env')]).toEqual([['x', '-la', '--json'], ['f', 'q'], ['A=1', 'B=2']]);
    expect(() => parseArgs(['--nope'], { flags: [], options: [] })).toThrow(UsageError);
    expect(() => parseArgs(['--env'], { flags: [], options: ['env'] })).toThrow(/needs a value/);
  });

  it('passes one argument as a shell command and quotes several words', () => {
    expect(commandOf(['make && make test'])).toBe('make && make test');
    expect(commandOf(['echo', 'a b', "it's", '$HOME', 'plain-1.txt'])).toBe(`echo 'a b' 'it'\\''s' '$HOME' plain-1.txt`);
  });

  it('maps finished tasks to the exit codes a shell would show', () => {
    expect(exitCodeOf(task({ status: 'succeeded', exitCode: 0 }))).toBe(0);
    expect(exitCodeOf(task({ status: 'failed', exitCode: 3 }))).toBe(3);
    expect(exitCodeOf(task({ status: 'failed', exitCode: null, signal: 'SIGKILL' }))).toBe(137);
    expect(exitCodeOf(task({ status: 'failed', exitCode: null }))).toBe(1);
    expect(exitCodeOf(task({ status: 'cancelled', exitCode: null, signal: 'SIGTERM' }))).toBe(130);
    expect(exitCodeOf(task({ status: 'timed_out', exitCode: null }))).toBe(124);
    expect(exitCodeOf(task({ status: 'lost', exitCode: null }))).toBe(255);
  });

  it('signs HS256 tokens with sub, tenant, name, iat and exp', () => {
    const token = signToken({ sub: 'alice', tenant: 'acme', name: 'Alice' }, 's3cret', 60, 1000);
    const [head, body, sig] = token.split('.');
    expect(JSON.parse(Buffer.from(head!, 'base64url').toString())).toEqual({ alg: 'HS256', typ: 'JWT' });
    expect(JSON.parse(Buffer.from(body!, 'base64url').toString())).toEqual({ sub: 'alice', tenant: 'acme', name: 'Alice', iat: 1000, exp: 1060 });
    expect(sig).toBe(createHmac('sha256', 's3cret').update(`${head}.${body}`).digest('base64url'));
  });

  it('parses SSE split across chunks and skips comments', async () => {
    const text = ': connected\n\nid: 5\nevent: a\ndata: {"x":1}\n\n: ping\n\nid: 6\nevent: b\ndata: {"y":"2\\n"}\n\n';
    const bytes = Buffer.from(text);
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.subarray(i, i + 7));
        c.close();
      },
    });
    const got = [];
    for await (const e of parseSse(body)) got.push(e);
    expect(got).toEqual([
      { id: 5, event: 'a', data: { x: 1 } },
      { id: 6, event: 'b', data: { y: '2\n' } },
    ]);
  });

  it('aligns tables', () => {
    expect(table(['A', 'BB'], [['xxx', 'y']])).toBe('A    BB\nxxx  y\n');
  });

  it('answers usage mistakes with exit code 2 and prints help', async () => {
    const c = capture();
    expect(await main(['bogus'], c.io)).toBe(2);
    expect(c.err()).toMatch(/unknown command "bogus"/);
    const h = capture();
    expect(await main(['--help'], h.io)).toBe(0);
    expect(h.out()).toMatch(/^usage: handplane/);
    const t = capture({ JWT_SECRET: 'k' });
    expect(await main(['token', 'alice', 'acme', '--json'], t.io)).toBe(0);
    expect(JSON.parse(t.out())).toEqual({ token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/), expiresAt: expect.any(String) });
    const n = capture();
    expect(await main(['tasks', 'ls'], n.io)).toBe(2);
    expect(n.err()).toMatch(/no token/);
  });
});
