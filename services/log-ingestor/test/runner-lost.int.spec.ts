import { waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { tilingProblems } from '../src/app/log-tiling';
import { hostileBytes, ingestorEnv, quietLogger, sha256, uid } from './harness';
import { RunnerDouble } from './runner-double';

describe('log-ingestor when the runner is lost', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let ingestor: RunningIngestor;
  const doubles: RunnerDouble[] = [];

  beforeAll(async () => {
    h = await ingestorEnv('lost');
    ingestor = await startIngestor(h.config({ RUNNER_LOST_AFTER_MS: '1500' }), { logger: quietLogger(), instanceId: 'lost-a' });
  });
  afterAll(async () => {
    await ingestor?.stop();
    for (const d of doubles) await d.stop();
    await h?.close();
  });

  async function runnerWithOutput(runnerId: string, bytes: number) {
    const d = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, runnerId);
    doubles.push(d);
    d.keepAlive(200);
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const source = hostileBytes(bytes);
    d.command(ids.commandId).write(source);
    await h.startTask({ ...ids, runnerId });
    await waitFor(() => d.acks.some((a) => a.commandId === ids.commandId && a.offset === bytes), 15_000, 'the output to be durable');
    return { d, ids, source };
  }

  async function expectUnavailableWithPrefix(ids: { commandId: string; taskId: string }, source: Buffer) {
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'unavailable', 20_000, 'unavailable');
    const rows = await h.rows(ids.commandId);
    expect(tilingProblems(rows.map((r) => ({ offset: r.offset, length: r.data.length })), source.length)).toEqual([]);
    expect(sha256(Buffer.concat(rows.map((r) => r.data)))).toBe(sha256(source));
    const events = await h.cmdEvents(ids.commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandResultUnavailable']);
    expect(events[0]!.data).toMatchObject({ commandId: ids.commandId, taskId: ids.taskId, attempt: 1, durableBytes: source.length });
    expect(await h.cursor(ids.commandId)).toMatchObject({ committed_offset: source.length, owner: null });
    expect((await h.cursor(ids.commandId))!.last_error).toMatch(/runner/);
  }

  it('settles a command whose runner died (heartbeat stopped) as unavailable, keeping the durable prefix', async () => {
    const { d, ids, source } = await runnerWithOutput('runner-dies', 100_000);
    d.kill();
    await expectUnavailableWithPrefix(ids, source);
  });

  it('settles a command whose runner left the registry as unavailable after the lost delay', async () => {
    const { d, ids, source } = await runnerWithOutput('runner-leaves', 30_000);
    d.kill();
    await d.deregister();
    await expectUnavailableWithPrefix(ids, source);
  });

  it('keeps retrying while the runner heart-beats, and reads on when it answers again', async () => {
    const d = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-flaky');
    doubles.push(d);
    d.keepAlive(200);
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    // The runner does not know the command yet (NOT_FOUND) for a while: a failure, not a loss.
    await h.startTask({ ...ids, runnerId: 'runner-flaky' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.last_error?.includes('unknown command'), 10_000, 'a recorded failure');
    await new Promise((r) => setTimeout(r, 300));
    const source = hostileBytes(5_000);
    d.command(ids.commandId).write(source);
    d.command(ids.commandId).exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 20_000, 'readable');
    expect((await h.cmdEvents(ids.commandId)).map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable']);
    expect(sha256(Buffer.concat((await h.rows(ids.commandId)).map((r) => r.data)))).toBe(sha256(source));
  });

  it('settles as unavailable when a live runner keeps not knowing the command past the lost delay', async () => {
    const d = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-amnesic');
    doubles.push(d);
    d.keepAlive(200);
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    await h.startTask({ ...ids, runnerId: 'runner-amnesic' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'unavailable', 20_000, 'unavailable');
    const events = await h.cmdEvents(ids.commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandResultUnavailable']);
    expect(events[0]!.data).toMatchObject({ durableBytes: 0, reason: expect.stringMatching(/no longer knows/) });
    expect(await h.rows(ids.commandId)).toEqual([]);
  });
});
