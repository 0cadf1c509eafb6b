import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { RunnerClients, unary } from '@handplane/platform';
import { CommandState, SignalKind, type ListRequest, type ListResponse } from '@handplane/proto';
import { NATS_URL, testNats } from '@handplane/testing';
import { identityOfSync } from '../app/sandbox/proc';
import { Command } from '../app/command';
import { CommandSpool } from '../app/spool';
import type { CommandMeta } from '../app/types';
import { exec, execRequest, markedProcesses, metaOf, readLog, signal, startTestRunner, status, tempDataDir, waitExit, waitFor, type TestNats } from '../runner.spec-helper';

const ROOT = resolve(__dirname, '../../../..');
const TWENTY = Array.from({ length: 20 }, (_, i) => `${i + 1}\n`).join('');

/** Issue point 2: a runner restart (clean or a crash) loses nothing; running commands are re-adopted. */
describe('sandbox-runner: re-adoption after a restart', () => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    env = await testNats('runadopt');
    data = await tempDataDir();
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    // Whatever a failed test left running is ended by a last runner in 'stop' mode.
    const last = await startTestRunner(env, data.dir).catch(() => null);
    await last?.stop();
    await env?.close();
    await data?.remove();
  });

  it('a clean restart leaves the command running; the next runner serves every line exactly once and the exit record', async () => {
    const a = await startTestRunner(env, data.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
    const req = execRequest('for i in $(seq 1 20); do echo $i; sleep 0.1; done');
    await exec(a.client, req);
    await waitFor(async () => (await status(a.client, req.commandId)).outputBytes >= 4, 10_000, 'a few lines');
    const before = await metaOf(data.dir, req.commandId);
    await a.stop();
    // No runner for a while: the command goes on writing.
    await new Promise((r) => setTimeout(r, 700));
    expect(before.sandbox && identityOfSync(before.sandbox.initPid)).toEqual(before.sandbox?.init);

    const b = await startTestRunner(env, data.dir);
    try {
      expect((await status(b.client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_RUNNING);
      const { bytes, exit } = await waitExit(b.client, req.commandId);
      expect(bytes.toString()).toBe(TWENTY);
      expect(exit).toMatchObject({ exitCode: 0, signal: '', reason: '', endOffset: TWENTY.length });
      const list = await unary<ListRequest, ListResponse>(b.client.list.bind(b.client), { conversationId: 'conv-1' });
      expect(list.commands.find((c) => c.commandId === req.commandId)?.runnerId).toBe(b.runner.runnerId);
      // Served again from disk, identical.
      expect((await readLog(b.client, { commandId: req.commandId })).bytes.toString()).toBe(TWENTY);
    } finally {
      await b.stop();
    }
  });

  it('a crashed runner (SIGKILL) loses nothing: output written while no runner ran is read once, in order', async () => {
    const crashed = await startRunnerProcess(env, data.dir);
    children.push(crashed.child);
    const req = execRequest('for i in $(seq 1 20); do echo $i; sleep 0.1; done', { env: { HP_MARK: 'crash-1' } });
    await exec(crashed.client, req);
    await waitFor(async () => (await status(crashed.client, req.commandId)).outputBytes >= 4, 10_000, 'a few lines');
    crashed.child.kill('SIGKILL');
    await new Promise((r) => crashed.child.once('exit', r));
    crashed.clients.close();
    await new Promise((r) => setTimeout(r, 500));

    const b = await startTestRunner(env, data.dir);
    try {
      const { bytes, exit } = await waitExit(b.client, req.commandId);
      expect(bytes.toString()).toBe(TWENTY);
      expect(exit).toMatchObject({ exitCode: 0, signal: '' });
      expect(await markedProcesses('crash-1', 'hp-no-token')).toEqual([]);
    } finally {
      await b.stop();
    }
  });

  it('a command that ended while no runner ran gets its exact exit code from the sandbox init', async () => {
    const a = await startTestRunner(env, data.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
    const req = execRequest('echo a; sleep 0.5; echo b >&2; exit 137');
    await exec(a.client, req);
    await a.stop();
    await new Promise((r) => setTimeout(r, 1000));
    const b = await startTestRunner(env, data.dir);
    try {
      const r = await waitExit(b.client, req.commandId);
      expect(r.bytes.toString()).toBe('a\nb\n');
      // 137 by itself, not SIGKILL: a shell's $? could not tell them apart, the init's wait status can.
      expect(r.exit).toMatchObject({ exitCode: 137, signal: '', reason: '' });
    } finally {
      await b.stop();
    }
  });

  it('a stop in progress survives the restart: the next runner escalates to SIGKILL and reports the verified exit', async () => {
    const a = await startTestRunner(env, data.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
    const req = execRequest(`trap '' TERM; echo ready; while :; do sleep 0.05; done`, { env: { HP_MARK: 'stop-restart' } });
    await exec(a.client, req);
    await waitFor(async () => (await status(a.client, req.commandId)).outputBytes > 0, 10_000, 'ready');
    const r = await signal(a.client, { commandId: req.commandId, kind: SignalKind.SIGNAL_KIND_STOP, graceMs: 1500 });
    expect(r.status?.state).toBe(CommandState.COMMAND_STATE_STOPPING);
    await a.stop();
    const b = await startTestRunner(env, data.dir);
    try {
      expect((await status(b.client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_STOPPING);
      const { exit } = await waitExit(b.client, req.commandId);
      expect(exit).toMatchObject({ signal: 'SIGKILL', reason: 'stopped' });
      expect(await markedProcesses('stop-restart', 'hp-no-token')).toEqual([]);
    } finally {
      await b.stop();
    }
  });

  it('never adopts (or signals) a process whose pid was reused: identity is pid + start time, not the pid', async () => {
    // A process that is not ours, recorded as if it were a sandbox's init with another start time.
    const stranger = spawn('sleep', ['30'], { stdio: 'ignore' });
    children.push(stranger);
    const pid = stranger.pid as number;
    await waitFor(() => identityOfSync(pid), 5000, 'stranger started');
    const spool = CommandSpool.forCommand(join(data.dir, 'commands'), 'reused-pid');
    const meta: CommandMeta = {
      v: 1,
      commandId: 'reused-pid',
      taskId: 't-reused',
      conversationId: 'conv-reused',
      tenant: 'acme',
      generation: { epoch: 1, attempt: 1 },
      command: 'sleep 30',
      cwd: '',
      startedAtMs: Date.now(),
      pid,
      processIdentity: null,
      runnerBootId: 'an-earlier-boot',
      ackedOffset: 0,
      sandbox: { kind: 'unshare', launcherPid: pid, initPid: pid, init: { hostBootId: identityOfSync(pid)?.hostBootId ?? '', startTicks: '1' }, nsInode: '4026530000', commandPgid: pid, cgroups: [] },
    };
    const cmd = new Command(meta, spool, { written: 0, records: 0, exit: null });
    const writer = await spool.create(meta, { onWritten: (o, n) => cmd.advance(o, n), onPressure: () => undefined, onFailed: () => undefined });
    await writer.close();
    const r = await startTestRunner(env, data.dir);
    try {
      const { exit } = await waitExit(r.client, 'reused-pid');
      expect(exit.reason).toMatch(/^sandbox_lost/);
      expect(stranger.exitCode).toBeNull();
      expect(stranger.signalCode).toBeNull();
      expect(() => process.kill(pid, 0)).not.toThrow();
    } finally {
      await r.stop();
      stranger.kill('SIGKILL');
    }
  });
});

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePort(port));
    });
  });
}

/** The runner as its own OS process (started like main.ts), so a test can really crash it. */
async function startRunnerProcess(env: TestNats, dataDir: string) {
  const port = await freePort();
  const boot = `require(${JSON.stringify(join(ROOT, 'scripts/ts-register.js'))}).register(); require(${JSON.stringify(join(ROOT, 'services/sandbox-runner/src/main.ts'))});`;
  const child = spawn(process.execPath, ['-e', boot], {
    env: { ...process.env, NATS_URL, NATS_PREFIX: env.prefix, RUNNER_HOST: '127.0.0.1', RUNNER_PORT: String(port), RUNNER_HTTP_PORT: '0', RUNNER_DATA_DIR: dataDir, LOG_LEVEL: 'error', RUNNER_ON_SHUTDOWN: 'detach' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const clients = new RunnerClients();
  const client = clients.get(`127.0.0.1:${port}`);
  await waitFor(async () => (await unary<ListRequest, ListResponse>(client.list.bind(client), { conversationId: '' })).bootId, 60_000, 'runner process up');
  return { child, client, clients };
}
