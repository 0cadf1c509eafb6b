import { markDeliveredReplySchema } from '@handplane/contracts';
import { callRpc } from '@handplane/platform';
import { waitFor } from '@handplane/testing';
import { startIngestor, type RunningIngestor } from '../src/service';
import { hostileBytes, ingestorEnv, quietLogger, uid } from './harness';
import { RunnerDouble } from './runner-double';

/**
 * Point 3 (the result state machine's last step): `readable → delivered` through the
 * `mark-delivered` request/reply the agent-runtime and the gateway call once they handed the result
 * over. Only a readable result is delivered; a repeat appends nothing.
 */
describe('log-ingestor mark-delivered', () => {
  let h: Awaited<ReturnType<typeof ingestorEnv>>;
  let runner: RunnerDouble;
  let ingestor: RunningIngestor;

  beforeAll(async () => {
    h = await ingestorEnv('delivered');
    runner = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-d');
    runner.keepAlive(200);
    ingestor = await startIngestor(h.config({ RUNNER_LOST_AFTER_MS: '1000' }), { logger: quietLogger(), instanceId: 'delivered-a', claimIntervalMs: 50 });
  });
  afterAll(async () => {
    await ingestor?.stop();
    await runner?.stop();
    await h?.close();
  });

  const deliver = (commandId: string, deliveredTo: 'agent' | 'user' = 'user') => callRpc(h.env.nats.nc, h.t.rpc.markDelivered, { commandId, deliveredTo }, markDeliveredReplySchema);

  it('marks a readable result delivered once: one CommandResultDelivered, the cursor says delivered, a repeat appends nothing', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    const cmd = runner.command(ids.commandId);
    cmd.write(hostileBytes(50_000));
    cmd.exit({ exitCode: 2 });
    await h.startTask({ ...ids, runnerId: 'runner-d' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');

    expect(await deliver(ids.commandId, 'user')).toEqual({ ok: true, resultState: 'delivered', appended: true });
    expect(await deliver(ids.commandId, 'agent')).toEqual({ ok: true, resultState: 'delivered', appended: false });
    const events = await h.cmdEvents(ids.commandId);
    expect(events.map((e) => e.type)).toEqual(['CommandExited', 'CommandResultReadable', 'CommandResultDelivered']);
    expect(events[2]!.data).toEqual({ commandId: ids.commandId, taskId: ids.taskId, attempt: 1, deliveredTo: 'user' });
    expect(await h.cursor(ids.commandId)).toMatchObject({ result_state: 'delivered', end_offset: 50_000, exit_code: 2, committed_offset: 50_000, owner: null });
  });

  it('refuses a result still pending, and appends nothing', async () => {
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    runner.command(ids.commandId).write(Buffer.from('still running\n'));
    await h.startTask({ ...ids, runnerId: 'runner-d' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.committed_offset === 14, 15_000, 'the first bytes durable');
    const r = await deliver(ids.commandId, 'agent');
    expect(r).toMatchObject({ ok: false, error: { code: 'illegal_state' } });
    expect(await h.cmdEvents(ids.commandId)).toEqual([]);
    expect((await h.cursor(ids.commandId))?.result_state).toBe('result_pending');
    runner.command(ids.commandId).exit({ exitCode: 0 });
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'readable', 15_000, 'readable');
  });

  it('never delivers an unavailable result (an incomplete output is not a success)', async () => {
    const d = await RunnerDouble.start(h.env.nats, h.t.runnersBucket, 'runner-d-dies');
    d.keepAlive(200);
    const ids = { taskId: uid('t'), commandId: uid('c'), conversationId: uid('v') };
    d.command(ids.commandId).write(Buffer.from('partial'));
    await h.startTask({ ...ids, runnerId: 'runner-d-dies' });
    await waitFor(async () => (await h.cursor(ids.commandId))?.committed_offset === 7, 15_000, 'the prefix durable');
    d.kill();
    await waitFor(async () => (await h.cursor(ids.commandId))?.result_state === 'unavailable', 20_000, 'unavailable');
    expect(await deliver(ids.commandId)).toMatchObject({ ok: false, error: { code: 'illegal_state', message: expect.stringMatching(/unavailable/) } });
    expect((await h.cmdEvents(ids.commandId)).map((e) => e.type)).toEqual(['CommandResultUnavailable']);
    expect((await h.cursor(ids.commandId))?.result_state).toBe('unavailable');
  });

  it('answers not_found for a command the ingestor does not follow', async () => {
    expect(await deliver(uid('nope'))).toMatchObject({ ok: false, error: { code: 'not_found' } });
  });
});
