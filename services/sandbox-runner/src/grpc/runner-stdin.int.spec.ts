import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { unary } from '@handplane/platform';
import { CommandState, type RunnerClient, type WriteStdinRequest, type WriteStdinResponse } from '@handplane/proto';
import { STDIN_MAX_PENDING_BYTES, STDIN_MAX_WRITE_BYTES } from '../app/stdin';
import { codeOf, exec, execRequest, readLog, sha256, signal, startTestRunner, status, tempDataDir, useTestRunner, waitExit, waitFor } from '../runner.spec-helper';

const writeStdin = (c: RunnerClient, req: Partial<WriteStdinRequest> & { commandId: string }) =>
  unary<WriteStdinRequest, WriteStdinResponse>(c.writeStdin.bind(c), { taskId: '', generation: { epoch: 1, attempt: 1 }, data: Buffer.alloc(0), close: false, ...req });

/** Issue 10 part 2: a running command's stdin is a pipe the runner writes to (fenced) and closes. */
describe('sandbox-runner: WriteStdin (real processes)', () => {
  const t = useTestRunner('runstdin');

  async function startReady(command: string, over = {}) {
    const req = execRequest(command, over);
    await exec(t.client, req);
    await waitFor(async () => (await status(t.client, req.commandId)).outputBytes > 0, 10_000, 'the prompt');
    return req;
  }

  it('answers a [y/N] prompt: the command reads the line and goes on', async () => {
    const req = await startReady(`printf 'Continue? [y/N] '; read answer; echo "got <$answer>"`);
    // It blocks on the prompt: still running well after it printed it.
    await new Promise((r) => setTimeout(r, 300));
    expect((await status(t.client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_RUNNING);
    const r = await writeStdin(t.client, { commandId: req.commandId, taskId: req.taskId, data: Buffer.from('yes\n') });
    expect(r).toMatchObject({ written: 4, closed: false, totalWritten: 4 });
    const { bytes, exit } = await waitExit(t.client, req.commandId);
    expect(bytes.toString()).toBe('Continue? [y/N] got <yes>\n');
    expect(exit.exitCode).toBe(0);
  });

  it('close: the command reads end-of-file (cat ends), bytes arrive exactly; later writes are refused', async () => {
    const req = await startReady(`echo ready; cat | sha256sum`);
    const payload = Buffer.from(Array.from({ length: STDIN_MAX_WRITE_BYTES }, (_, i) => (i * 7) % 256));
    await writeStdin(t.client, { commandId: req.commandId, data: payload });
    const tail = Buffer.from('\u0000binary\xff tail');
    const r = await writeStdin(t.client, { commandId: req.commandId, data: tail, close: true });
    expect(r).toMatchObject({ closed: true, totalWritten: payload.length + tail.length });
    const { bytes, exit } = await waitExit(t.client, req.commandId);
    expect(exit.exitCode).toBe(0);
    expect(bytes.toString()).toBe(`ready\n${sha256(Buffer.concat([payload, tail]))}  -\n`);
    // Closing again is harmless; writing after the exit is refused.
    const e = await codeOf(writeStdin(t.client, { commandId: req.commandId, data: Buffer.from('x') }));
    expect(e.code).toBe(grpcStatus.FAILED_PRECONDITION);
    expect(e.details).toMatch(/exited/);
  });

  it('a closed stdin refuses more data while the command still runs; a close-only request is answered done', async () => {
    const req = await startReady(`echo ready; cat >/dev/null; echo eof; sleep 30`);
    await writeStdin(t.client, { commandId: req.commandId, close: true });
    await waitFor(async () => (await status(t.client, req.commandId)).outputBytes >= 'ready\neof\n'.length, 10_000, 'eof seen');
    const e = await codeOf(writeStdin(t.client, { commandId: req.commandId, data: Buffer.from('late') }));
    expect(e.code).toBe(grpcStatus.FAILED_PRECONDITION);
    expect(e.details).toMatch(/stdin is closed: closed on request/);
    expect(await writeStdin(t.client, { commandId: req.commandId, close: true })).toMatchObject({ written: 0, closed: true });
  });

  it('another sandbox cannot reach a command’s stdin: the FIFO has no name in the spool once the command runs', async () => {
    const req = await startReady(`echo ready; read line; echo "line <$line>"`);
    const dir = join(t.dataDir, 'commands', req.commandId);
    expect(readdirSync(dir)).not.toContain('stdin.fifo');
    // The runner still writes to it (through its own end).
    await writeStdin(t.client, { commandId: req.commandId, data: Buffer.from('private\n') });
    expect((await waitExit(t.client, req.commandId)).bytes.toString()).toBe('ready\nline <private>\n');
  });

  it.each(['unshare', 'none'])('close gives end-of-file with %s containment too (no launcher in between keeps a writer)', async (sandbox) => {
    const own = await tempDataDir();
    const r = await startTestRunner(t.env, own.dir, { RUNNER_SANDBOX: sandbox });
    try {
      const req = execRequest(`echo ready; cat; echo eof`);
      await exec(r.client, req);
      await waitFor(async () => (await status(r.client, req.commandId)).outputBytes > 0, 10_000, 'ready');
      await writeStdin(r.client, { commandId: req.commandId, data: Buffer.from('x\n'), close: true });
      const { bytes, exit } = await waitExit(r.client, req.commandId);
      expect({ out: bytes.toString(), code: exit.exitCode }).toEqual({ out: 'ready\nx\neof\n', code: 0 });
    } finally {
      await r.stop();
      await own.remove();
    }
  });

  it('refuses a stale generation or another task: nothing reaches the command', async () => {
    const req = await startReady(`echo ready; read line; echo "line <$line>"`, { generation: { epoch: 2, attempt: 3 } });
    for (const over of [{ generation: { epoch: 2, attempt: 2 } }, { generation: { epoch: 1, attempt: 3 } }, { generation: { epoch: 2, attempt: 3 }, taskId: 'someone-else' }]) {
      const e = await codeOf(writeStdin(t.client, { commandId: req.commandId, data: Buffer.from('stale\n'), ...over }));
      expect(e.code).toBe(grpcStatus.FAILED_PRECONDITION);
      expect(e.details).toMatch(/^stale .*nothing was written/);
    }
    const missing = await codeOf(writeStdin(t.client, { commandId: req.commandId, data: Buffer.from('x'), generation: undefined }));
    expect(missing.code).toBe(grpcStatus.INVALID_ARGUMENT);
    await writeStdin(t.client, { commandId: req.commandId, generation: { epoch: 2, attempt: 3 }, data: Buffer.from('fresh\n') });
    const { bytes } = await waitExit(t.client, req.commandId);
    expect(bytes.toString()).toBe('ready\nline <fresh>\n');
  });

  it('stdin survives a runner restart: no end-of-file meanwhile, the next runner writes on, counts on, and closes it', async () => {
    const own = await tempDataDir();
    const a = await startTestRunner(t.env, own.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
    // Echoes each line it reads; says so when it reads end-of-file.
    const req = execRequest(`echo ready; while IFS= read -r line; do echo "got <$line>"; done; echo "eof after $SECONDS s"`);
    let b: Awaited<ReturnType<typeof startTestRunner>> | undefined;
    try {
      await exec(a.client, req);
      await waitFor(async () => (await status(a.client, req.commandId)).outputBytes > 0, 10_000, 'ready');
      expect(await writeStdin(a.client, { commandId: req.commandId, data: Buffer.from('before\n') })).toMatchObject({ written: 7, totalWritten: 7 });
      await waitFor(async () => (await readLog(a.client, { commandId: req.commandId })).bytes.toString().includes('got <before>'), 10_000, 'the first line read');
      await a.stop();
      // No runner holds the FIFO now: the command must not read end-of-file.
      await new Promise((r) => setTimeout(r, 500));
      b = await startTestRunner(t.env, own.dir);
      const client = b.client;
      expect((await status(client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_RUNNING);
      expect((await readLog(client, { commandId: req.commandId })).bytes.toString()).not.toContain('eof');
      // The re-adopting runner writes on, and counts on from the total before the restart.
      expect(await writeStdin(client, { commandId: req.commandId, data: Buffer.from('after\n') })).toMatchObject({ written: 6, closed: false, totalWritten: 13 });
      expect(await writeStdin(client, { commandId: req.commandId, close: true })).toMatchObject({ written: 0, closed: true, totalWritten: 13 });
      const { bytes, exit } = await waitExit(client, req.commandId);
      expect(exit.exitCode).toBe(0);
      expect(bytes.toString()).toMatch(/^ready\ngot <before>\ngot <after>\neof after \d+ s\n$/);
    } finally {
      await b?.stop();
      await own.remove();
    }
  });

  it('a stdin closed before a restart stays closed after it: the command has read end-of-file, writes are refused', async () => {
    const own = await tempDataDir();
    const a = await startTestRunner(t.env, own.dir, { RUNNER_ON_SHUTDOWN: 'detach' });
    const req = execRequest(`echo ready; cat >/dev/null; echo eof; sleep 30`);
    let b: Awaited<ReturnType<typeof startTestRunner>> | undefined;
    try {
      await exec(a.client, req);
      await waitFor(async () => (await status(a.client, req.commandId)).outputBytes > 0, 10_000, 'ready');
      await writeStdin(a.client, { commandId: req.commandId, data: Buffer.from('x'), close: true });
      await waitFor(async () => (await readLog(a.client, { commandId: req.commandId })).bytes.toString().includes('eof'), 10_000, 'end-of-file read');
      await a.stop();
      b = await startTestRunner(t.env, own.dir);
      const e = await codeOf(writeStdin(b.client, { commandId: req.commandId, data: Buffer.from('late\n') }));
      expect(e.code).toBe(grpcStatus.FAILED_PRECONDITION);
      expect(e.details).toMatch(/stdin is closed: closed on request/);
      expect(await writeStdin(b.client, { commandId: req.commandId, close: true })).toMatchObject({ written: 0, closed: true, totalWritten: 1 });
      await signal(b.client, { commandId: req.commandId, graceMs: 100 });
      await waitExit(b.client, req.commandId);
    } finally {
      await b?.stop();
      await own.remove();
    }
  });

  it('bounds: more than 64 KiB in one call is RESOURCE_EXHAUSTED; a command that does not read gets back-pressure', async () => {
    const req = await startReady(`echo ready; sleep 30`);
    const big = await codeOf(writeStdin(t.client, { commandId: req.commandId, data: Buffer.alloc(STDIN_MAX_WRITE_BYTES + 1) }));
    expect(big.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    // Nobody reads: the kernel's buffer fills, then the runner's pending limit refuses more.
    let refused: { code: number; details: string } | null = null;
    let accepted = 0;
    for (let i = 0; i < 64 && !refused; i++) {
      try {
        accepted += (await writeStdin(t.client, { commandId: req.commandId, data: Buffer.alloc(STDIN_MAX_WRITE_BYTES, 0x61) })).written;
      } catch (e) {
        refused = await codeOf(Promise.reject(e));
      }
    }
    expect(refused?.code).toBe(grpcStatus.ABORTED);
    expect(refused?.details).toMatch(/^stdin_full/);
    expect(accepted).toBeGreaterThanOrEqual(STDIN_MAX_PENDING_BYTES - STDIN_MAX_WRITE_BYTES);
    expect(await codeOf(writeStdin(t.client, { commandId: 'no-such-command', data: Buffer.from('x') }))).toMatchObject({ code: grpcStatus.NOT_FOUND });
  });
});
