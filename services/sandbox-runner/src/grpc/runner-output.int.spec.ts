import { createHash } from 'node:crypto';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import { status as grpcStatus } from '@grpc/grpc-js';
import { RunnerRegistry, unary } from '@handplane/platform';
import { CommandState, OutputStream, SignalKind, type ListRequest, type ListResponse, type LogRecord } from '@handplane/proto';
import { ack, codeOf, exec, execRequest, readLog, sha256, status, useTestRunner, waitExit, waitFor } from '../runner.spec-helper';

const seqBytes = Buffer.concat([Buffer.from(Array.from({ length: 100_000 }, (_, i) => `${i + 1}\n`).join('')), Buffer.from([0xff, 0xfe, 0x00, 0x62, 0x69, 0x6e])]);

/** How many descriptors of this process (the in-process runner's) point at `path`. */
async function openFds(path: string): Promise<number> {
  const links = await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')));
  return links.filter((l) => l === path).length;
}

describe('sandbox-runner: output, exit codes, reads (real gRPC, real NATS)', () => {
  const t = useTestRunner('runout');

  it('returns seq 1 100000 and binary bytes byte-exact, in chunks of at most 64 KiB at exact offsets', async () => {
    const req = execRequest(`seq 1 100000; printf '\\xff\\xfe\\x00bin'`);
    const started = await exec(t.client, req);
    expect(started.created).toBe(true);
    expect(started.status?.state).toBe(CommandState.COMMAND_STATE_RUNNING);
    const r = await waitExit(t.client, req.commandId);
    expect(r.bytes.length).toBe(seqBytes.length);
    expect(sha256(r.bytes)).toBe(sha256(seqBytes));
    expect(r.bytes.equals(seqBytes)).toBe(true);
    expect(r.chunks.every((c) => c.data.length > 0 && c.data.length <= 65536 && c.stream === OutputStream.OUTPUT_STREAM_STDOUT)).toBe(true);
    expect(r.exit).toMatchObject({ exitCode: 0, signal: '', endOffset: seqBytes.length, reason: '' });

    const small = await readLog(t.client, { commandId: req.commandId, maxChunkBytes: 1000 });
    expect(small.chunks.every((c) => c.data.length <= 1000)).toBe(true);
    expect(small.bytes.equals(seqBytes)).toBe(true);

    const middle = await readLog(t.client, { commandId: req.commandId, fromOffset: 123_457 });
    expect(middle.bytes.equals(seqBytes.subarray(123_457))).toBe(true);
    expect(middle.exit?.endOffset).toBe(seqBytes.length);

    const atEnd = await readLog(t.client, { commandId: req.commandId, fromOffset: seqBytes.length });
    expect(atEnd.chunks).toHaveLength(0);
    expect(atEnd.exit?.endOffset).toBe(seqBytes.length);

    expect((await codeOf(readLog(t.client, { commandId: req.commandId, fromOffset: seqBytes.length + 1 }))).code).toBe(grpcStatus.OUT_OF_RANGE);
    const spooled = await readFile(join(t.dataDir, 'commands', req.commandId, 'output.bin'));
    expect(spooled.equals(seqBytes)).toBe(true);
  });

  it('keeps stdout and stderr apart: every chunk holds bytes of one stream only', async () => {
    const req = execRequest(`for i in $(seq 1 200); do printf OOOO; printf EEEE >&2; done; printf tail`);
    await exec(t.client, req);
    const r = await waitExit(t.client, req.commandId);
    const out = r.chunks.filter((c) => c.stream === OutputStream.OUTPUT_STREAM_STDOUT);
    const err = r.chunks.filter((c) => c.stream === OutputStream.OUTPUT_STREAM_STDERR);
    expect(Buffer.concat(out.map((c) => c.data)).toString()).toBe('O'.repeat(800) + 'tail');
    expect(Buffer.concat(err.map((c) => c.data)).toString()).toBe('E'.repeat(800));
    for (const c of err) expect(/^E+$/.test(c.data.toString())).toBe(true);
    for (const c of out) expect(/^(O|tail)+$/.test(c.data.toString())).toBe(true);
  });

  it('reports exit codes and the signal that ended a command', async () => {
    const zero = execRequest('true');
    const three = execRequest('echo bye; exit 3');
    const killed = execRequest('kill -KILL $$');
    for (const r of [zero, three, killed]) await exec(t.client, r);
    expect((await waitExit(t.client, zero.commandId)).exit).toMatchObject({ exitCode: 0, signal: '', endOffset: 0 });
    expect((await waitExit(t.client, three.commandId)).exit).toMatchObject({ exitCode: 3, signal: '', endOffset: 4 });
    const k = (await waitExit(t.client, killed.commandId)).exit;
    expect(k.exitCode).toBeUndefined();
    expect(k.signal).toBe('SIGKILL');
    const s = await status(t.client, three.commandId);
    expect(s).toMatchObject({ state: CommandState.COMMAND_STATE_EXITED, outputBytes: 4, ackedOffset: 0, runnerId: t.runner.runnerId });
    expect(s.exit?.exitCode).toBe(3);
  });

  it('follows a running command: every chunk, then the exit record last', async () => {
    const req = execRequest('for i in 1 2 3; do echo $i; sleep 0.2; done');
    await exec(t.client, req);
    const r = await readLog(t.client, { commandId: req.commandId, follow: true });
    expect(r.bytes.toString()).toBe('1\n2\n3\n');
    expect(r.records[r.records.length - 1].record?.$case).toBe('exit');
    expect(r.exit).toMatchObject({ exitCode: 0, endOffset: 6 });
  });

  it('runs in the conversation workspace with a minimal environment plus the request env', async () => {
    const req = execRequest('mkdir -p sub && cd sub && echo "$FOO|$HOME|$PWD|${NATS_URL:-unset}|$LANG"', { conversationId: 'conv-env', env: { FOO: 'sekrit-value' } });
    await exec(t.client, req);
    const ws = join(t.dataDir, 'workspaces', 'conv-env');
    expect((await waitExit(t.client, req.commandId)).bytes.toString()).toBe(`sekrit-value|${ws}|${ws}/sub|unset|C.UTF-8\n`);
    const inSub = execRequest('pwd', { conversationId: 'conv-env', cwd: 'sub' });
    await exec(t.client, inSub);
    expect((await waitExit(t.client, inSub.commandId)).bytes.toString()).toBe(`${ws}/sub\n`);
    const meta = await readFile(join(t.dataDir, 'commands', req.commandId, 'meta.json'), 'utf8');
    expect(meta).not.toContain('sekrit-value');
  });

  it('is idempotent on commandId: a repeated Exec answers the same command and does not run it again', async () => {
    const req = execRequest('echo once >> once.txt', { conversationId: 'conv-idem' });
    const first = await exec(t.client, req);
    const again = await exec(t.client, req);
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.status?.startedAtMs).toBe(first.status?.startedAtMs);
    await waitExit(t.client, req.commandId);
    const third = await exec(t.client, req);
    expect(third).toMatchObject({ created: false, status: { state: CommandState.COMMAND_STATE_EXITED } });
    expect(await readFile(join(t.dataDir, 'workspaces', 'conv-idem', 'once.txt'), 'utf8')).toBe('once\n');
    const other = await codeOf(exec(t.client, { ...req, generation: { epoch: 1, attempt: 2 } }));
    expect(other.code).toBe(grpcStatus.FAILED_PRECONDITION);
  });

  it.each([
    ['an empty command', { command: '  ' }, 'command must not be empty'],
    ['NUL in the command', { command: 'echo \0' }, 'NUL'],
    ['a cwd with ..', { cwd: '../x' }, 'inside the workspace'],
    ['an absolute cwd', { cwd: '/tmp' }, 'relative'],
    ['a cwd that does not exist', { cwd: 'nope' }, 'does not exist'],
    ['a bad env name', { env: { 'A-B': '1' } }, 'env name'],
    ['a missing commandId', { commandId: '' }, 'commandId is required'],
    ['a missing generation', { generation: undefined }, 'generation is required'],
  ])('refuses %s with INVALID_ARGUMENT', async (_what, over, message) => {
    const e = await codeOf(exec(t.client, execRequest('echo x', over)));
    expect(e.code).toBe(grpcStatus.INVALID_ARGUMENT);
    expect(e.details).toContain(message);
  });

  it('refuses a cwd that is a symlink leading out of the workspace', async () => {
    const mk = execRequest('ln -s / escape', { conversationId: 'conv-link' });
    await exec(t.client, mk);
    await waitExit(t.client, mk.commandId);
    const e = await codeOf(exec(t.client, execRequest('ls', { conversationId: 'conv-link', cwd: 'escape' })));
    expect(e.code).toBe(grpcStatus.INVALID_ARGUMENT);
  });

  it('answers NOT_FOUND for an unknown command on every call', async () => {
    expect((await codeOf(status(t.client, 'no-such'))).code).toBe(grpcStatus.NOT_FOUND);
    expect((await codeOf(ack(t.client, 'no-such', 0))).code).toBe(grpcStatus.NOT_FOUND);
    expect((await codeOf(readLog(t.client, { commandId: 'no-such' }))).code).toBe(grpcStatus.NOT_FOUND);
  });

  it('records a monotonic ack cursor and refuses one beyond the output', async () => {
    const req = execRequest('printf 0123456789');
    await exec(t.client, req);
    await waitExit(t.client, req.commandId);
    expect((await ack(t.client, req.commandId, 4)).ackedOffset).toBe(4);
    expect((await ack(t.client, req.commandId, 2)).ackedOffset).toBe(4);
    expect((await codeOf(ack(t.client, req.commandId, 11))).code).toBe(grpcStatus.OUT_OF_RANGE);
    expect((await status(t.client, req.commandId)).ackedOffset).toBe(4);
    const meta = JSON.parse(await readFile(join(t.dataDir, 'commands', req.commandId, 'meta.json'), 'utf8')) as { ackedOffset: number };
    expect(meta.ackedOffset).toBe(4);
  });

  it('lists commands with the runner id and boot id, filtered by conversation', async () => {
    const req = execRequest('true', { conversationId: 'conv-list' });
    await exec(t.client, req);
    const list = await unary<ListRequest, ListResponse>(t.client.list.bind(t.client), { conversationId: 'conv-list' });
    expect(list).toMatchObject({ runnerId: t.runner.runnerId, bootId: t.runner.bootId });
    expect(list.commands.map((c) => c.commandId)).toEqual([req.commandId]);
  });

  it('spools a large fast output byte-exact while the reader pauses (backpressure on both sides)', async () => {
    const size = 20_000_000;
    const expected = Buffer.alloc(size);
    for (let i = 0; i < size; i += 11) expected.write('abcdefghij\n', i, 'latin1');
    const req = execRequest(`yes abcdefghij | head -c ${size}`);
    await exec(t.client, req);
    const hash = createHash('sha256');
    let next = 0;
    let total = 0;
    await new Promise<void>((resolve, reject) => {
      const call = t.client.readLog({ commandId: req.commandId, fromOffset: 0, follow: true, maxChunkBytes: 0 });
      let paused = false;
      call.on('data', (r: LogRecord) => {
        if (r.record?.$case !== 'chunk') return;
        const c = r.record.value;
        if (c.offset !== next) reject(new Error(`chunk at ${c.offset}, expected ${next}`));
        next += c.data.length;
        total += c.data.length;
        hash.update(c.data);
        if (!paused) {
          paused = true;
          call.pause();
          setTimeout(() => call.resume(), 500);
        }
      });
      call.on('error', reject);
      call.on('end', resolve);
    });
    expect(total).toBe(size);
    expect(hash.digest('hex')).toBe(sha256(expected));
  });

  it('lets go of the spool files when a follower cancels', async () => {
    const req = execRequest('echo hi; sleep 30');
    await exec(t.client, req);
    const output = join(t.dataDir, 'commands', req.commandId, 'output.bin');
    // The spool writer of the running command holds one descriptor; the reader adds its own.
    const writerFds = await openFds(output);
    const call = t.client.readLog({ commandId: req.commandId, fromOffset: 0, follow: true, maxChunkBytes: 0 });
    call.on('error', () => undefined);
    await new Promise((resolve) => call.once('data', resolve));
    expect(await openFds(output)).toBe(writerFds + 1);
    call.cancel();
    await waitFor(async () => (await openFds(output)) === writerFds, 10_000, 'reader to close the spool');
    await unary(t.client.signal.bind(t.client), { commandId: req.commandId, taskId: '', generation: req.generation, kind: SignalKind.SIGNAL_KIND_KILL, graceMs: 0, reason: 'test' });
    await waitExit(t.client, req.commandId);
  });

  it('heart-beats into the registry bucket and is ready', async () => {
    const registry = await RunnerRegistry.open(t.env.nats, t.env.topology.runnersBucket);
    const rec = await waitFor(() => registry.get(t.runner.runnerId), 10_000, 'runner record');
    expect(rec).toMatchObject({ runnerId: t.runner.runnerId, address: `127.0.0.1:${t.runner.grpcPort}`, capacity: 64, version: '0.1.0', bootId: t.runner.bootId });
    expect(Date.now() - new Date(rec.heartbeatAt).getTime()).toBeLessThan(60_000);
    const ready = await fetch(`http://127.0.0.1:${t.runner.httpPort}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready' });
  });
});
