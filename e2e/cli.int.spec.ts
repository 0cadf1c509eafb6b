import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { waitFor } from '@handplane/testing';
import { startCliStack } from './cli-stack';

/**
 * The `handplane` CLI against the whole system in-process: development tokens, `run` with output
 * and exit codes passed through, the task registry, logs, stop, stop-all, audit and chat.
 */
describe('handplane CLI (real NATS + Postgres + every service)', () => {
  let stack: Awaited<ReturnType<typeof startCliStack>>;
  let env: Record<string, string>;
  beforeAll(async () => {
    stack = await startCliStack('cli', { FOREGROUND_WINDOW_MS: '1500' });
    const minted = await stack.cli(['token', 'alice', 'acme', '--name', 'Alice'], { env: { JWT_SECRET: 'cli-test-secret' } });
    expect(minted.code).toBe(0);
    env = { HANDPLANE_TOKEN: minted.stdout.toString().trim() };
  }, 120_000);
  afterAll(() => stack?.stop(), 60_000);

  const cli = (argv: string[], stdin?: string) => stack.cli(argv, { env, ...(stdin === undefined ? {} : { stdin }) });
  const json = async (argv: string[]) => {
    const r = await cli(['--json', ...argv]);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    return JSON.parse(r.stdout.toString());
  };

  it('mints development tokens the gateway accepts, and refuses a wrong secret', async () => {
    expect(await json(['tasks', 'ls', '--all'])).toEqual([]);
    const forged = await stack.cli(['token', 'alice', 'acme'], { env: { JWT_SECRET: 'not-the-secret' } });
    const refused = await stack.cli(['tasks', 'ls'], { env: { HANDPLANE_TOKEN: forged.stdout.toString().trim() } });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/401 unauthorized/);
    const usage = await stack.cli(['token', 'alice']);
    expect([usage.code, usage.stderr]).toEqual([2, expect.stringMatching(/usage: handplane token/)]);
    expect((await stack.cli(['tasks', 'ls'])).code).toBe(2); // no token at all
  });

  it('runs a command, prints its output byte for byte and exits with its exit code', async () => {
    const r = await cli(['run', '--', 'printf "a\\nb\\n"; printf "\\377\\000z" ; exit 3']);
    expect(r.code).toBe(3);
    expect(r.stdout).toEqual(Buffer.from([0x61, 0x0a, 0x62, 0x0a, 0xff, 0x00, 0x7a]));
    expect(r.stderr).toMatch(/task \S+ in conversation \S+/);
    const ok = await cli(['run', '--', 'echo', 'two words', "it's"]);
    expect([ok.code, ok.stdout.toString()]).toEqual([0, "two words it's\n"]);
    const j = await cli(['--json', 'run', '--', 'echo hi; exit 4']);
    expect(j.code).toBe(4);
    expect(JSON.parse(j.stdout.toString())).toMatchObject({ exitCode: 4, outputComplete: true, output: 'hi\n', task: { status: 'failed', exitCode: 4 } });
  });

  it('follows a command that goes to the background, showing progress on stderr while it waits', async () => {
    const r = await cli(['run', '--', 'echo before; sleep 3; echo after']);
    expect([r.code, r.stdout.toString()]).toEqual([0, 'before\nafter\n']);
    expect(r.stderr).toMatch(/is running in the background; \d+ s without new output/);
  });

  it('lists, follows and stops tasks; `run` passes the stop through as 130', async () => {
    const conv = (await json(['run', '--', 'true'])).conversationId as string;
    const running = stack.start(['run', '--conversation', conv, '--', 'echo started; sleep 60'], { env });
    const task = await waitFor(
      async () => (await json(['tasks', 'ls'])).find((t: { conversationId: string; status: string }) => t.conversationId === conv && t.status === 'running'),
      20_000,
      'the task running in the registry',
    );
    expect(task).toMatchObject({ status: 'running', command: 'echo started; sleep 60' });
    const human = await cli(['tasks', 'ls']);
    expect(human.stdout.toString()).toMatch(new RegExp(`^TASK\\s+STATUS\\s+EXIT\\s+AGE\\s+CONVERSATION\\s+COMMAND\\n${task.taskId}\\s+running`, 'm'));
    await waitFor(async () => (await cli(['tasks', 'logs', task.taskId])).stdout.toString() === 'started\n', 20_000, 'the first output');

    const follower = stack.start(['tasks', 'logs', '-f', task.taskId], { env });
    const stopped = await cli(['tasks', 'stop', task.taskId]);
    expect([stopped.code, stopped.stdout.toString()]).toEqual([0, `task ${task.taskId} (attempt 1): stopping\n`]);
    const r = await running.done;
    expect([r.code, r.stdout.toString()]).toEqual([130, 'started\n']);
    expect(r.stderr).toMatch(/cancelled/);
    expect((await follower.done).stdout.toString()).toBe('started\n');
    expect((await json(['tasks', 'show', task.taskId])).status).toBe('cancelled');
    expect(await json(['tasks', 'ls', '--conversation', conv])).toEqual([]);
    expect((await json(['tasks', 'ls', '--all', '--conversation', conv])).map((t: { status: string }) => t.status).sort()).toEqual(['cancelled', 'succeeded']);
  });

  it('stops a running `run` on Ctrl-C', async () => {
    const running = stack.start(['run', '--', 'echo go; sleep 60'], { env });
    await waitFor(() => running.stdout().toString() === 'go\n', 20_000, 'the output');
    running.interrupt();
    const r = await running.done;
    expect(r.code).toBe(130);
    expect(r.stderr).toMatch(/stopping task/);
  });

  it('stops everything of a conversation and shows its audit log', async () => {
    const conv = (await json(['run', '--', 'true'])).conversationId as string;
    const running = stack.start(['run', '--conversation', conv, '--', 'sleep 60'], { env });
    const task = await waitFor(async () => (await json(['tasks', 'ls', '--conversation', conv]))[0], 20_000, 'the task');
    await waitFor(async () => (await json(['tasks', 'show', task.taskId])).status === 'running', 20_000, 'the task to run');
    const r = await cli(['stop-all', conv]);
    expect([r.code, r.stdout.toString()]).toEqual([0, `conversation ${conv} is now in epoch 2; stopping ${task.taskId}\n`]);
    expect((await running.done).code).toBe(130);

    const log = await json(['audit', conv]);
    const types = log.map((e: { type: string }) => e.type);
    expect(types.slice(0, 2)).toEqual(['conversation.created', 'member.added']);
    expect(types).toEqual(expect.arrayContaining(['task.started', 'task.finished', 'epoch.ended']));
    expect(log.find((e: { type: string }) => e.type === 'epoch.ended')).toMatchObject({ actor: 'alice', data: { epoch: 1, nextEpoch: 2, by: 'alice' } });
    const human = await cli(['audit', conv]);
    expect(human.stdout.toString()).toMatch(/^\s+\d+\s+\S+Z\s+alice\s+conversation\.created\s+"handplane run" created by alice$/m);
    expect(human.stdout.toString()).toMatch(/epoch\.ended\s+epoch 1 ended by alice; stopping 1 task\(s\)$/m);
    // With the task events merged in: who asked for the stop, the exit that proved it.
    const full = await json(['audit', conv, '--tasks']);
    const ofTask = full.filter((e: { source: string; data: { taskId?: string } }) => e.source === 'task' && e.data.taskId === task.taskId).map((e: { type: string }) => e.type);
    expect(ofTask).toEqual(expect.arrayContaining(['TaskRegistered', 'TaskStarted', 'TaskStopRequested', 'CommandExited', 'TaskFinished']));
    expect((await cli(['audit', conv, '--tasks'])).stdout.toString()).toMatch(/^T\s*\d+\s+\S+Z\s+alice\s+TaskStopRequested\s+\S+ stop requested by alice/m);
  });

  it('chats: a message starts the agent, its work streams back, and EOF waits until it is idle', async () => {
    const r = await cli(['chat'], '$ echo from-chat\n');
    expect(r.code).toBe(0);
    const out = r.stdout.toString();
    expect(out).toMatch(/^alice> \$ echo from-chat$/m);
    expect(out).toMatch(/▶ task \S+: echo from-chat/);
    expect(out).toMatch(/^agent> /m);
    expect(r.stderr).toMatch(/conversation \S+/);
  });

  it('chats with a question the agent asks, answered by the next line', async () => {
    const stdin = new PassThrough();
    const chat = stack.start(['--json', 'chat'], { env, stdin });
    stdin.write('? Which branch?\n');
    await waitFor(() => chat.stdout().toString().includes('"event":"question.asked"'), 30_000, 'the question');
    stdin.end('main\n');
    const r = await chat.done;
    expect(r.code).toBe(0);
    const events = r.stdout.toString().trim().split('\n').map((l) => JSON.parse(l) as { event: string; data: Record<string, unknown> });
    expect(events.find((e) => e.event === 'question.answered')?.data).toMatchObject({ text: 'main', by: 'alice' });
  });

  it('reports API errors with their status and code, exit code 1', async () => {
    const r = await cli(['tasks', 'show', 'no-such-task']);
    expect([r.code, r.stderr]).toEqual([1, 'handplane: task not found (404 not_found)\n']);
    expect((await cli(['audit', 'nope'])).code).toBe(1);
    expect((await cli(['bogus'])).code).toBe(2);
  });

  it('is a real executable: the exit code reaches the shell', async () => {
    const launcher = join(__dirname, '..', 'scripts', 'ts-register.js');
    const main = join(__dirname, '..', 'cli', 'src', 'main.ts');
    const code = `require(${JSON.stringify(launcher)}).register(); require(${JSON.stringify(main)}).main(process.argv.slice(1)).then((c) => process.exit(c))`;
    // Asynchronously: the gateway runs in this process and must keep answering.
    const child = spawn(process.execPath, ['-e', code, 'run', '--', 'echo out; echo err >&2; exit 7'], { env: { ...process.env, ...env, HANDPLANE_URL: stack.baseUrl }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const status = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    const r = { status, stdout };
    expect([r.status, r.stdout]).toEqual([7, 'out\nerr\n']); // combined output, as the runner spools it
  });
});
