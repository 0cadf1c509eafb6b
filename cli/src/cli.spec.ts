import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from './args';
import type { Task } from './api';
import { parseSse } from './api';
import { commandOf } from './commands/run';
import { signToken } from './commands/token';
import { exitCodeOf } from './follow';
import { commandTable, runTable, summarize, table, taskDetails, taskTable } from './format';
import type { CommandView, RunView } from '@handplane/contracts';
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
  awaitingInput: null,
  ...over,
});

function capture(env: Record<string, string> = {}) {
  let out = '';
  let err = '';
  const io: Io = { out: (c) => void (out += Buffer.from(c).toString()), err: (t) => void (err += t), stdin: process.stdin, env, interactive: false, onInterrupt: () => () => undefined };
  return { io, out: () => out, err: () => err };
}

describe('handplane CLI (pure parts)', () => {
  it('marks a running task that waits for input in the task table', () => {
    const out = taskTable([
      task({ taskId: 't-ask', status: 'running', background: true, awaitingInput: { prompt: 'Continue? [y/N]', offset: 3, attempt: 1, since: '2026-01-01T00:00:01.000Z' } }),
      task({ taskId: 't-run', status: 'running' }),
    ]);
    const line = (id: string) => out.split('\n').find((l) => l.startsWith(id)) ?? '';
    expect(line('t-ask')).toContain('running (bg) (awaiting input)');
    expect(line('t-run')).not.toContain('awaiting');
  });

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

  describe('runs and task attempts (read models)', () => {
    const run = (n: number, over: Partial<RunView> = {}): RunView => ({
      runId: `r${n}`,
      userId: 'alice',
      trigger: 'message',
      triggerRef: `m${n}`,
      status: 'completed',
      detail: null,
      startedAt: `2026-01-01T00:0${n}:00.000Z`,
      finishedAt: `2026-01-01T00:0${n}:30.000Z`,
      ...over,
    });
    const runs = [run(1), run(2, { status: 'failed', detail: 'model\nunavailable' }), run(3, { status: 'running', trigger: 'task_event', triggerRef: 't1', finishedAt: null })];
    const attempts: CommandView[] = [
      { commandId: 'c1', attempt: 1, runnerId: 'runner-a', exitCode: null, signal: 'SIGKILL', endOffset: null, reason: 'lost', startedAt: null, finishedAt: null, resultState: 'unavailable', outputBytes: 14, truncation: { droppedFrom: 6, droppedTo: 14, droppedBytes: 8 }, deliveredTo: null },
      { commandId: 'c2', attempt: 2, runnerId: 'runner-b', exitCode: 0, signal: null, endOffset: 5_000_000_123, reason: 'exited', startedAt: '2026-01-01T00:04:00.000Z', finishedAt: '2026-01-01T00:05:00.000Z', resultState: 'delivered', outputBytes: 5_000_000_123, truncation: null, deliveredTo: 'agent' },
    ];
    // A stand-in gateway that pages runs two at a time, as the real one does with X-Next-After.
    const asked: string[] = [];
    let server: Server;
    let url: string;
    beforeAll(async () => {
      server = createServer((req, res) => {
        asked.push(req.url!);
        const u = new URL(req.url!, 'http://x');
        res.setHeader('content-type', 'application/json');
        if (u.pathname === '/v1/conversations/cv/runs') {
          const after = Number(u.searchParams.get('after') ?? 0);
          const page = runs.filter((_, i) => i + 1 > after).slice(0, 2);
          if (after + 2 < runs.length) res.setHeader('X-Next-After', String(after + 2));
          res.end(JSON.stringify(page));
        } else if (u.pathname === '/v1/tasks/t1/commands') res.end(JSON.stringify(attempts));
        else res.writeHead(404).end(JSON.stringify({ error: { code: 'not_found', message: 'task not found' } }));
      });
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise((ok) => server.close(ok)));

    it('prints every run over all pages, oldest first', async () => {
      const c = capture();
      expect(await main(['--url', url, '--token', 'x', 'runs', 'cv'], c.io)).toBe(0);
      expect(asked.filter((p) => p.includes('/runs'))).toEqual(['/v1/conversations/cv/runs?after=0&limit=1000', '/v1/conversations/cv/runs?after=2&limit=1000']);
      expect(c.out()).toBe(runTable(runs));
      const lines = c.out().trimEnd().split('\n');
      expect(lines.map((l) => l.split(/\s+/)[0])).toEqual(['RUN', 'r1', 'r2', 'r3']);
      expect(lines[2]).toMatch(/failed\s+message m2 .* model unavailable$/);
      expect(lines[3]).toMatch(/running\s+task_event t1\s+alice\s+2026-01-01T00:03:00.000Z\s+-/);
      const j = capture();
      expect(await main(['--url', url, '--token', 'x', '--json', 'runs', 'cv'], j.io)).toBe(0);
      expect(JSON.parse(j.out())).toEqual(runs);
      expect(runTable([])).toBe('no runs\n');
      expect(await main(['--url', url, '--token', 'x', 'runs'], capture().io)).toBe(2);
    });

    it('prints a task’s attempts; an unknown task fails with the API’s answer', async () => {
      const c = capture();
      expect(await main(['--url', url, '--token', 'x', 'tasks', 'commands', 't1'], c.io)).toBe(0);
      expect(c.out()).toBe(commandTable(attempts));
      const [head, first, second] = c.out().trimEnd().split('\n');
      expect(head!.split(/\s+/)).toEqual(['ATTEMPT', 'COMMAND', 'RUNNER', 'EXIT', 'REASON', 'RESULT', 'BYTES', 'FINISHED']);
      expect(first).toMatch(/^1\s+c1\s+runner-a\s+SIGKILL\s+lost\s+unavailable\s+14 \(8 dropped\)\s+-$/);
      expect(second).toMatch(/^2\s+c2\s+runner-b\s+0\s+exited\s+delivered \(to agent\)\s+5000000123\s+2026-01-01T00:05:00.000Z$/);
      const missing = capture();
      expect(await main(['--url', url, '--token', 'x', 'tasks', 'commands', 'nope'], missing.io)).toBe(1);
      expect(missing.err()).toMatch(/task not found \(404 not_found\)/);
      expect(commandTable([])).toBe('no attempts yet\n');
    });
  });
});
