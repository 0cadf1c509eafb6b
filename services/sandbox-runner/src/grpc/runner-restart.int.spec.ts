import { spawn } from 'node:child_process';
import { appendFile, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { loadConfig } from '@handplane/contracts';
import { createLogger, RunnerRegistry, unary } from '@handplane/platform';
import { CommandState, type ListRequest, type ListResponse } from '@handplane/proto';
import { NATS_URL, testNats } from '@handplane/testing';
import { Command } from '../app/command';
import { processIdentity } from '../app/process-group';
import { CommandSpool } from '../app/spool';
import { ack, codeOf, exec, execRequest, expectGroupGone, groupAlive, readLog, sha256, startTestRunner, status, tempDataDir, waitExit, waitFor, type TestNats } from '../runner.spec-helper';
import { startRunner } from '../service';

describe('sandbox-runner: restart on the same data dir, lost commands, spool sweep', () => {
  let env: TestNats;
  let data: Awaited<ReturnType<typeof tempDataDir>>;
  const orphans: number[] = [];

  beforeAll(async () => {
    env = await testNats('runrst');
    data = await tempDataDir();
  });
  afterAll(async () => {
    for (const pgid of orphans) if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    await env?.close();
    await data?.remove();
  });

  it('serves finished commands byte-exact after a restart, and ends running ones on a clean stop', async () => {
    const bytes = Buffer.concat([Buffer.from('a\n'), Buffer.from([0, 0xff, 0xc3, 0x28]), Buffer.from('\nz')]);
    const a = await startTestRunner(env, data.dir);
    const done = execRequest(`printf 'a\\n\\x00\\xff\\xc3\\x28\\n'; echo err >&2; printf z`, { conversationId: 'conv-r' });
    await exec(a.client, done);
    const before = await waitExit(a.client, done.commandId);
    await ack(a.client, done.commandId, 3);
    const running = execRequest('echo going; sleep 30', { conversationId: 'conv-r' });
    await exec(a.client, running);
    await waitFor(async () => (await status(a.client, running.commandId)).outputBytes > 0, 10_000, 'output');
    await a.stop();

    const b = await startTestRunner(env, data.dir);
    try {
      expect(b.runner.bootId).not.toBe(a.runner.bootId);
      const after = await readLog(b.client, { commandId: done.commandId });
      expect(sha256(after.bytes)).toBe(sha256(before.bytes));
      expect(after.chunks.map((c) => [c.offset, c.stream])).toEqual(before.chunks.map((c) => [c.offset, c.stream]));
      expect(after.exit).toEqual(before.exit);
      const outOnly = Buffer.concat(after.chunks.filter((c) => c.stream === 1).map((c) => c.data));
      expect(outOnly.equals(bytes)).toBe(true);
      expect(await status(b.client, done.commandId)).toMatchObject({ state: CommandState.COMMAND_STATE_EXITED, ackedOffset: 3, outputBytes: before.bytes.length });
      expect((await ack(b.client, done.commandId, before.bytes.length)).ackedOffset).toBe(before.bytes.length);

      // Stopped with the runner: an honest exit record, the output it produced kept.
      const stopped = await waitExit(b.client, running.commandId);
      expect(stopped.bytes.toString()).toBe('going\n');
      expect(stopped.exit).toMatchObject({ signal: 'SIGTERM', reason: 'runner_shutdown' });

      const list = await unary<ListRequest, ListResponse>(b.client.list.bind(b.client), { conversationId: 'conv-r' });
      expect(list.bootId).toBe(b.runner.bootId);
      expect(list.commands.map((c) => c.commandId)).toEqual([done.commandId, running.commandId]);
    } finally {
      await b.stop();
    }
  });

  it('marks a command left running by a crashed runner as lost, keeps its output and kills its orphaned group', async () => {
    // What a runner killed with SIGKILL leaves behind: meta.json, output with a torn tail, no exit.json.
    const orphan = spawn('bash', ['-c', 'sleep 30'], { detached: true, stdio: 'ignore' });
    const pid = orphan.pid as number;
    orphans.push(pid);
    const spool = CommandSpool.forCommand(join(data.dir, 'commands'), 'crashed-1');
    const meta = { v: 1 as const, commandId: 'crashed-1', taskId: 't-crashed', conversationId: 'conv-crash', tenant: 'acme', generation: { epoch: 1, attempt: 1 }, command: 'sleep 30', cwd: '', startedAtMs: 1_700_000_000_000, pid, processIdentity: await processIdentity(pid), runnerBootId: 'old-boot', ackedOffset: 0 };
    const cmd = new Command(meta, spool, { written: 0, records: 0, exit: null });
    const writer = await spool.create(meta, { onWritten: (o, r) => cmd.advance(o, r), onPressure: () => undefined, onFailed: () => undefined });
    writer.append('stdout', Buffer.from('partial '));
    writer.append('stderr', Buffer.from('out'));
    await writer.close();
    await appendFile(spool.outputPath, 'torn-without-a-record');

    const r = await startTestRunner(env, data.dir);
    try {
      const log = await readLog(r.client, { commandId: 'crashed-1' });
      expect(log.bytes.toString()).toBe('partial out');
      expect(log.exit).toMatchObject({ signal: '', endOffset: 11, reason: 'lost: runner restarted before the command finished' });
      expect(log.exit?.exitCode).toBeUndefined();
      expect((await stat(spool.outputPath)).size).toBe(11);
      await expectGroupGone(pid);
    } finally {
      await r.stop();
    }
  });

  it('removes a spool that a crash left without meta.json (nothing was spawned for it)', async () => {
    await mkdir(join(data.dir, 'commands', 'half-made'), { recursive: true });
    const r = await startTestRunner(env, data.dir);
    try {
      expect((await readdir(join(data.dir, 'commands'))).filter((n) => n.includes('half-made'))).toEqual([]);
      const req = execRequest('echo fresh', { commandId: 'half-made' });
      expect((await exec(r.client, req)).created).toBe(true);
      expect((await waitExit(r.client, 'half-made')).bytes.toString()).toBe('fresh\n');
    } finally {
      await r.stop();
    }
  });

  it('frees a spool only once the command exited, was acked to its end and the retention passed', async () => {
    const r = await startTestRunner(env, data.dir, { RUNNER_SPOOL_RETENTION_MS: '0' }, { sweepIntervalMs: 50 });
    try {
      const req = execRequest('printf 12345');
      await exec(r.client, req);
      await waitExit(r.client, req.commandId);
      await ack(r.client, req.commandId, 4);
      await new Promise((res) => setTimeout(res, 300));
      expect((await status(r.client, req.commandId)).ackedOffset).toBe(4);
      await ack(r.client, req.commandId, 5);
      await waitFor(async () => (await codeOf(status(r.client, req.commandId))).code === grpcStatus.NOT_FOUND, 30_000, 'spool freed');
      // The command leaves the runner's table first; its files go right after (asynchronously).
      await waitFor(async () => (await readdir(join(data.dir, 'commands'))).every((n) => !n.includes(req.commandId)), 30_000, 'spool files deleted');
    } finally {
      await r.stop();
    }
  });

  it('deregisters from the registry on stop', async () => {
    const r = await startTestRunner(env, data.dir, {}, { heartbeatMs: 100 });
    const registry = await RunnerRegistry.open(env.nats, env.topology.runnersBucket);
    await waitFor(() => registry.get(r.runner.runnerId), 10_000, 'registered');
    await r.stop();
    expect(await registry.get(r.runner.runnerId)).toBeNull();
  });

  it('refuses plaintext on a non-loopback host, and bad runner settings, before starting anything', async () => {
    const logger = createLogger('sandbox-runner-test', 'silent');
    const cfg = loadConfig({ NATS_URL, NATS_PREFIX: env.prefix, RUNNER_HOST: '0.0.0.0', RUNNER_PORT: '0', RUNNER_HTTP_PORT: '0' });
    await expect(startRunner(cfg, { dataDir: data.dir, env: {}, logger })).rejects.toThrow(/RUNNER_TLS_CERT/);
    const local = { ...cfg, RUNNER_HOST: '127.0.0.1' };
    await expect(startRunner(local, { dataDir: data.dir, env: { RUNNER_TLS_CERT: '/x' }, logger })).rejects.toThrow(/invalid runner configuration/);
    await expect(startRunner(local, { dataDir: data.dir, env: { RUNNER_CAPACITY: 'many' }, logger })).rejects.toThrow(/RUNNER_CAPACITY/);
  });
});
