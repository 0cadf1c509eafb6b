import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { CommandState } from '@handplane/proto';
import { testNats } from '@handplane/testing';
import { ack, codeOf, exec, execRequest, metaOf, readLog, startTestRunner, status, tempDataDir, waitExit, waitFor, type TestNats } from '../runner.spec-helper';

const LINE = 'abcdefghi\n';
const isPrefixOfLines = (b: Buffer) => b.equals(Buffer.from(LINE.repeat(Math.ceil(b.length / LINE.length) + 1)).subarray(0, b.length));
const blocksOf = async (path: string) => (await stat(path)).blocks * 512;

/** Issue point 2 (spool space) and "a full disk while spooling". */
describe('sandbox-runner spool: budget, full disk, Ack releases space', () => {
  let env: TestNats;

  beforeAll(async () => {
    env = await testNats('runspool');
  });
  afterAll(async () => {
    await env?.close();
  });

  it('RUNNER_SPOOL_MAX_BYTES: the command is killed with reason spool_full and exactly the bytes that fit are kept', async () => {
    const data = await tempDataDir();
    const t = await startTestRunner(env, data.dir, { RUNNER_SPOOL_MAX_BYTES: '100000' });
    try {
      const req = execRequest(`yes abcdefghi | head -c 3000000; sleep 30`);
      await exec(t.client, req);
      const { bytes, exit } = await waitExit(t.client, req.commandId);
      expect(exit.reason).toMatch(/^spool_full: the runner's spool reached RUNNER_SPOOL_MAX_BYTES \(100000 bytes\)/);
      expect(exit.signal).toBe('SIGKILL');
      expect(bytes.length).toBe(100000);
      expect(isPrefixOfLines(bytes)).toBe(true);
      expect((await status(t.client, req.commandId)).state).toBe(CommandState.COMMAND_STATE_EXITED);
    } finally {
      await t.stop();
      await data.remove();
    }
  });

  it('a real full disk (a 2 MiB tmpfs): the command is stopped, the task gets a clear reason, the output so far is kept', async () => {
    const mnt = await mkdtemp(join(tmpdir(), 'hp-full-'));
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', mnt], { stdio: 'ignore' });
    } catch {
      await rm(mnt, { recursive: true, force: true });
      process.stderr.write('sandbox-runner spool: full-disk test skipped: cannot mount a tmpfs here (needs root)\n');
      return;
    }
    let t: Awaited<ReturnType<typeof startTestRunner>> | undefined;
    try {
      t = await startTestRunner(env, mnt);
      // Some output, then a burst that fills the disk (the command's own writes and the spool's).
      const req = execRequest(`echo before the disk filled; sleep 1; yes abcdefghi | head -c 50000000; sleep 30`);
      await exec(t.client, req);
      const { bytes, exit } = await waitExit(t.client, req.commandId);
      expect(exit.reason).toMatch(/^spool_full: no space left/);
      const stdout = Buffer.concat((await readLog(t.client, { commandId: req.commandId })).chunks.filter((c) => c.stream === 1).map((c) => c.data));
      // The output from before the disk filled is kept, and what follows is an exact prefix of the burst.
      expect(stdout.subarray(0, 23).toString()).toBe('before the disk filled\n');
      expect(isPrefixOfLines(stdout.subarray(23))).toBe(true);
      expect(exit.endOffset).toBe(bytes.length);
      // The runner goes on: the raw files of the dead command were removed, so a small command fits.
      const next = execRequest('echo still here');
      await exec(t.client, next);
      expect((await waitExit(t.client, next.commandId)).bytes.toString()).toBe('still here\n');
    } finally {
      await t?.stop();
      execFileSync('umount', [mnt]);
      await rm(mnt, { recursive: true, force: true });
    }
  });

  it('a command that writes 64 MiB and exits at once: every byte lands in the spool exactly once (no double copy at the final drain)', async () => {
    const data = await tempDataDir();
    const t = await startTestRunner(env, data.dir);
    const size = 64 * 1024 * 1024;
    try {
      const req = execRequest(`yes abcdefghi | head -c ${size}; printf END >&2`);
      await exec(t.client, req);
      const { bytes, exit, chunks } = await waitExit(t.client, req.commandId);
      expect(exit).toMatchObject({ exitCode: 0, endOffset: size + 3 });
      const out = Buffer.concat(chunks.filter((c) => c.stream === 1).map((c) => c.data));
      expect(out.length).toBe(size);
      expect(isPrefixOfLines(out)).toBe(true);
      // stderr is complete too (its place among stdout's chunks is only as exact as the runner's reads: two files, no common clock).
      expect(Buffer.concat(chunks.filter((c) => c.stream === 2).map((c) => c.data)).toString()).toBe('END');
      expect(bytes.length).toBe(size + 3);
    } finally {
      await t.stop();
      await data.remove();
    }
  });

  it('Ack releases the acknowledged bytes of a running command (spool and raw output); reads below are refused', async () => {
    const data = await tempDataDir();
    const t = await startTestRunner(env, data.dir);
    const size = 5 * 1024 * 1024;
    try {
      const req = execRequest(`head -c ${size} /dev/zero | tr '\\0' a; sleep 30`);
      await exec(t.client, req);
      await waitFor(async () => (await status(t.client, req.commandId)).outputBytes === size, 20_000, 'all output spooled');
      const dir = join(data.dir, 'commands', req.commandId);
      expect(await blocksOf(join(dir, 'output.bin'))).toBeGreaterThanOrEqual(size);
      expect(await blocksOf(join(dir, 'stdout.raw'))).toBeGreaterThanOrEqual(size);
      expect((await ack(t.client, req.commandId, size - 1000)).ackedOffset).toBe(size - 1000);
      // Released in whole MiB: 4 MiB of the 5.
      await waitFor(async () => (await metaOf(data.dir, req.commandId)).freedOffset === 4 * 1024 * 1024, 10_000, 'released');
      await waitFor(async () => (await blocksOf(join(dir, 'output.bin'))) <= 1.5 * 1024 * 1024 && (await blocksOf(join(dir, 'stdout.raw'))) <= 1.5 * 1024 * 1024, 10_000, 'blocks given back');
      const below = await codeOf(readLog(t.client, { commandId: req.commandId, fromOffset: 0 }));
      expect(below.code).toBe(grpcStatus.OUT_OF_RANGE);
      expect(below.details).toMatch(/released/);
      const rest = await readLog(t.client, { commandId: req.commandId, fromOffset: 4 * 1024 * 1024 });
      expect(rest.bytes.equals(Buffer.alloc(size - 4 * 1024 * 1024, 'a'))).toBe(true);
    } finally {
      await t.stop();
      await data.remove();
    }
  });
});
