import type { StartTaskReply } from '@handplane/contracts';
import type { SandboxCommandEvent } from '@handplane/domain';
import { projectorPosition, waitForProjection } from '@handplane/platform';
import { ensureConversation, waitFor } from '@handplane/testing';
import { EPOCHS_PROJECTION } from '../src/app/epochs';
import { harness, startBody, type Harness } from './harness';
import { RunnerDouble } from './runner-double';

const ok = (r: StartTaskReply) => {
  if (!r.ok) throw new Error(`start-task failed: ${r.error.code} ${r.error.message}`);
  return r;
};
const json = (v: unknown) => Buffer.from(JSON.stringify(v));

describe('malformed and unknown-version events on every stream the coordinator reads', () => {
  let h: Harness;
  let runner: RunnerDouble;
  beforeAll(async () => {
    h = await harness('badin');
    runner = await RunnerDouble.start(h.nats, h.t, h.clock);
  });
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
  });

  it('are logged and terminated without redelivery, and never block the events behind them', async () => {
    const at = '2026-01-01T00:00:00.000Z';
    await ensureConversation(h.nats, h.t, 'conv-bad', 'acme');
    await h.nats.js.publish(h.t.task('junk-1'), Buffer.from([0xff, 0xfe, 0x00]));
    await h.nats.js.publish(h.t.task('junk-2'), json({ type: 'TaskRegistered', v: 9, data: { taskId: 'junk-2' }, metadata: { at } }));
    await h.nats.js.publish(h.t.task('junk-3'), json({ type: 'TaskTeleported', v: 1, data: {}, metadata: { at } }));
    await h.nats.js.publish(h.t.cmd('junk-4'), Buffer.from('{"type":'));
    await h.nats.js.publish(h.t.cmd('junk-5'), json({ type: 'CommandResultReadable', v: 7, data: { commandId: 'junk-5', taskId: 't', attempt: 1, outputBytes: 1 }, metadata: { at } }));
    await h.nats.js.publish(h.t.conv('conv-bad'), json({ type: 'epoch.ended', v: 1, data: { epoch: 'three' }, metadata: { at } }));
    await h.nats.js.publish(h.t.conv('conv-bad'), json({ type: 'epoch.ended', v: 2, data: { epoch: 3, nextEpoch: 4 }, metadata: { at } }));

    // Work behind the junk goes through: a task starts and settles, and a valid stop-all is applied.
    const r = ok(await h.startTask(startBody({ requestId: 'after-junk', conversationId: 'conv-bad' })));
    await h.waitForTaskEvent(r.taskId, 'TaskStarted');
    const ids = { commandId: r.commandId, taskId: r.taskId, attempt: 1 };
    const events: SandboxCommandEvent[] = [
      { type: 'CommandExited', data: { ...ids, runnerId: runner.runnerId, exitCode: 0, signal: null, endOffset: 0, startedAt: at, finishedAt: at, reason: '' }, metadata: { at } },
      { type: 'CommandResultReadable', data: { ...ids, outputBytes: 0 }, metadata: { at } },
    ];
    await h.appendCommandEvents(r.commandId, events, `ingest:${r.commandId}`);
    expect((await h.waitForTaskEvent(r.taskId, 'TaskFinished')).data.status).toBe('succeeded');
    expect(await h.stopAll({ conversationId: 'conv-bad', epoch: 3 })).toEqual({ ok: true, epoch: 4, stopping: [] });

    for (const durable of ['coordinator-tasks', 'coordinator-commands', 'coordinator-notices']) {
      const info = await h.waitForConsumerIdle(durable);
      expect({ durable, redelivered: info.num_redelivered }).toEqual({ durable, redelivered: 0 });
    }
    const tasksLast = (await h.nats.jsm.streams.info(h.t.streams.TASKS)).state.last_seq;
    expect(await waitForProjection(h.pool, 'tasks', tasksLast)).toBe(true);
    const convLast = (await h.nats.jsm.streams.info(h.t.streams.CONV)).state.last_seq;
    await waitFor(async () => (await projectorPosition(h.pool, EPOCHS_PROJECTION)) >= convLast, 10_000, 'epochs projection past the junk');
    const row = await h.pool.query('SELECT epoch FROM conversation_epochs WHERE conversation_id = $1', ['conv-bad']);
    expect(row.rows).toEqual([{ epoch: 4 }]);
    expect(await h.startTask(startBody({ requestId: 'stale', conversationId: 'conv-bad', epoch: 3 }))).toMatchObject({ ok: false, error: { code: 'conflict' } });
  });
});

describe('start-task checks the conversation against the log, not the caller', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await harness('convten');
  });
  afterAll(async () => {
    await h?.close();
  });

  const refused = { ok: false, error: { code: 'not_found' } };

  it('refuses a conversation that was never created, and registers nothing', async () => {
    const r = await h.startTask(startBody({ requestId: 'ghost', conversationId: 'conv-ghost' }), { create: false });
    expect(r).toMatchObject(refused);
    expect(r.ok ? '' : r.error.message).toBe('conversation conv-ghost does not exist');
    expect((await h.nats.jsm.streams.info(h.t.streams.TASKS)).state.messages).toBe(0);
  });

  it("refuses another tenant's conversation with the same answer as a missing one (its existence is not revealed)", async () => {
    await ensureConversation(h.nats, h.t, 'conv-globex', 'globex', 'gail');
    const r = await h.startTask(startBody({ requestId: 'cross', conversationId: 'conv-globex', tenant: 'acme' }), { create: false });
    expect(r).toMatchObject(refused);
    expect(r.ok ? '' : r.error.message).toBe('conversation conv-globex does not exist');
    // Its own tenant starts there; a cached answer does not let the other tenant in afterwards.
    ok(await h.startTask(startBody({ requestId: 'own', conversationId: 'conv-globex', tenant: 'globex', userId: 'gail' }), { create: false }));
    expect(await h.startTask(startBody({ requestId: 'cross-2', conversationId: 'conv-globex', tenant: 'acme' }), { create: false })).toMatchObject(refused);
  });

  it('refuses a subject whose first message is not a conversation.created (junk on the internal NATS)', async () => {
    await h.nats.js.publish(h.t.conv('conv-junk'), json({ type: 'message.user', v: 1, data: { messageId: 'm', userId: 'alice', text: 'hi' }, metadata: { at: '2026-01-01T00:00:00.000Z' } }));
    await ensureConversation(h.nats, h.t, 'conv-junk', 'acme');
    expect(await h.startTask(startBody({ requestId: 'junk', conversationId: 'conv-junk' }), { create: false })).toMatchObject(refused);
    await h.nats.js.publish(h.t.conv('conv-forged'), json({ type: 'conversation.created', v: 1, data: { conversationId: 'conv-other', tenant: 'acme', title: '', createdBy: 'x' }, metadata: { at: '2026-01-01T00:00:00.000Z' } }));
    expect(await h.startTask(startBody({ requestId: 'forged', conversationId: 'conv-forged' }), { create: false })).toMatchObject(refused);
  });
});
