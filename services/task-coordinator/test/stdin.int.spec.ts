import { createHash } from 'node:crypto';
import { writeStdinReplySchema, type StartTaskReply, type WriteStdinReply } from '@handplane/contracts';
import type { SandboxCommandEvent } from '@handplane/domain';
import { callRpc } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

type Ok = Extract<StartTaskReply, { ok: true }>;
const ok = (r: StartTaskReply): Ok => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const b64 = (s: string) => Buffer.from(s).toString('base64');
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** `rpc.coordinator.write-stdin` against real NATS and Postgres and a gRPC runner double. */
describe('task coordinator: write-stdin', () => {
  let h: Harness;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('stdin');
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
  });

  const write = (body: Record<string, unknown>): Promise<WriteStdinReply> => callRpc(h.nats.nc, h.t.rpc.writeStdin, { tenant: 'acme', userId: 'alice', ...body }, writeStdinReplySchema);
  const errorOf = (r: WriteStdinReply) => (r.ok ? null : r.error.code);
  const running = async (requestId: string) => {
    const r = ok(await h.startTask(startBody({ requestId })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    return r;
  };

  it('writes to the runner with the task generation, records task.stdin (size and digest, never the data), closes', async () => {
    const r = await running('w-1');
    const a = await write({ taskId: r.taskId, attempt: 1, data: b64('hunter2\n') });
    expect(a).toEqual({ ok: true, taskId: r.taskId, attempt: 1, bytes: 8, closed: false, totalBytes: 8 });
    const b = await write({ taskId: r.taskId, data: '', close: true, via: 'agent', userId: 'bob' });
    expect(b).toMatchObject({ ok: true, bytes: 0, closed: true, totalBytes: 8 });
    expect(runner.stdin.get(r.commandId)).toEqual({ bytes: Buffer.from('hunter2\n'), closed: true });
    const sent = runner.stdinWrites.filter((w) => w.commandId === r.commandId);
    expect(sent.map((w) => ({ taskId: w.taskId, generation: w.generation }))).toEqual([
      { taskId: r.taskId, generation: { epoch: 3, attempt: 1 } },
      { taskId: r.taskId, generation: { epoch: 3, attempt: 1 } },
    ]);
    const events = await waitFor(
      async () => {
        const all = (await h.convEvents('conv-1')).filter((e) => e.type === 'task.stdin' && e.data.taskId === r.taskId);
        return all.length === 2 ? all : undefined;
      },
      10_000,
      'two task.stdin events',
    );
    expect(events.map((e) => e.data)).toEqual([
      { taskId: r.taskId, commandId: r.commandId, attempt: 1, by: 'alice', via: 'user', bytes: 8, sha256: sha('hunter2\n'), closed: false },
      { taskId: r.taskId, commandId: r.commandId, attempt: 1, by: 'bob', via: 'agent', bytes: 0, sha256: sha(''), closed: true },
    ]);
    expect(JSON.stringify(events)).not.toContain('hunter2');
    expect(JSON.stringify(events)).not.toContain(b64('hunter2\n'));
  });

  it('refuses: another tenant or conversation (not_found), a stale attempt or runner generation (conflict), a finished task (illegal_state), too much data', async () => {
    const r = await running('w-2');
    expect(errorOf(await write({ taskId: r.taskId, tenant: 'globex', data: b64('x') }))).toBe('not_found');
    expect(errorOf(await write({ taskId: r.taskId, conversationId: 'conv-other', data: b64('x') }))).toBe('not_found');
    expect(errorOf(await write({ taskId: 'no-such-task', data: b64('x') }))).toBe('not_found');
    expect(errorOf(await write({ taskId: 'bad.subject', data: b64('x') }))).toBe('not_found');
    expect(errorOf(await write({ taskId: r.taskId, attempt: 2, data: b64('x') }))).toBe('conflict');
    expect(errorOf(await write({ taskId: r.taskId, data: 'not base64!' }))).toBe('validation');
    expect(errorOf(await write({ taskId: r.taskId, data: Buffer.alloc(64 * 1024 + 1).toString('base64') }))).toMatch(/^(too_large|validation)$/);
    // The runner's fence: it runs another generation than the task's, and writes nothing.
    runner.reportAs.set(r.commandId, { epoch: 3, attempt: 9 });
    const stale = await write({ taskId: r.taskId, data: b64('x') });
    expect(stale.ok ? null : stale.error).toMatchObject({ code: 'conflict', message: expect.stringMatching(/stale/) });
    runner.reportAs.delete(r.commandId);
    expect(runner.stdin.get(r.commandId)).toBeUndefined();

    const at = '2026-01-01T00:00:05.000Z';
    const ids = { commandId: r.commandId, taskId: r.taskId, attempt: 1 };
    const settled: SandboxCommandEvent[] = [
      { type: 'CommandExited', data: { ...ids, runnerId: 'runner-double', exitCode: 0, signal: null, endOffset: 0, startedAt: at, finishedAt: at, reason: '' }, metadata: { at } },
      { type: 'CommandResultReadable', data: { ...ids, outputBytes: 0 }, metadata: { at } },
    ];
    await h.appendCommandEvents(r.commandId, settled, `ingest:${r.commandId}`);
    await h.waitForTaskEvent(r.taskId, 'TaskFinished');
    const finished = await write({ taskId: r.taskId, data: b64('late') });
    expect(finished.ok ? null : finished.error).toMatchObject({ code: 'illegal_state', message: expect.stringMatching(/has finished \(succeeded\)/) });
    expect((await h.convEvents('conv-1')).filter((e) => e.type === 'task.stdin' && e.data.taskId === r.taskId)).toEqual([]);
  });
});
