import { headers as natsHeaders } from '@nats-io/transport-node';
import { waitFor } from '@handplane/testing';
import { insertTask } from './doubles';
import { expectError, startHarness, type Harness } from './harness';
import { openSse, type SseStream } from './sse-client';

/** `GET /v1/tasks/:id/output/follow`: a task's output live from LOGS, as the ingestor publishes it. */
describe('gateway output follow (real NATS + Postgres)', () => {
  let h: Harness;
  const alice: [string, string] = ['alice', 'acme'];

  beforeAll(async () => {
    h = await startHarness('gwfollow', { SSE_HEARTBEAT_MS: '500' });
  });
  afterAll(() => h?.stop());

  // What the ingestor writes to LOGS: chunks at their offsets, the truncation marker, the exit record.
  const publishChunk = (commandId: string, offset: number, data: Buffer) => {
    const hd = natsHeaders();
    hd.set('Hp-Offset', String(offset));
    hd.set('Hp-Stream', 'stdout');
    return h.nats.nats.js.publish(h.nats.topology.log(commandId), data, { msgID: `${commandId}:${offset}`, headers: hd });
  };
  const publishMarker = (commandId: string, droppedFrom: number, droppedTo: number) => {
    const hd = natsHeaders();
    hd.set('Hp-Truncated', JSON.stringify({ droppedFrom, droppedTo, droppedBytes: droppedTo - droppedFrom }));
    hd.set('Hp-Offset', String(droppedFrom));
    return h.nats.nats.js.publish(h.nats.topology.log(commandId), new Uint8Array(0), { msgID: `${commandId}:truncated`, headers: hd });
  };
  const publishExit = (commandId: string, endOffset: number) => {
    const hd = natsHeaders();
    hd.set('Hp-Exit', JSON.stringify({ exitCode: 0, signal: null, endOffset, startedAt: 'x', finishedAt: 'y', reason: 'exited' }));
    hd.set('Hp-Offset', String(endOffset));
    return h.nats.nats.js.publish(h.nats.topology.log(commandId), new Uint8Array(0), { msgID: `${commandId}:exit`, headers: hd });
  };
  const follow = async (taskId: string, q = '', headers: Record<string, string> = {}) => openSse(h.baseUrl, `/v1/tasks/${taskId}/output/follow${q}`, await h.token(...alice), headers);
  const bytesOf = (s: SseStream) => Buffer.concat(s.events.filter((e) => e.event === 'chunk').map((e) => Buffer.from((e.data as { data: string }).data, 'base64')));
  const endOf = (s: SseStream) => s.events.find((e) => e.event === 'end');

  it('streams the bytes as they are published, exact, and ends with the exit record', async () => {
    const conv = await h.conversation(alice);
    const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    const commandId = `cmd-${taskId}`;
    const a = Buffer.from([0x68, 0x69, 0x0a, 0xff, 0x00]);
    await publishChunk(commandId, 0, a);
    const s = await follow(taskId);
    expect(await s.status).toBe(200);
    await waitFor(() => bytesOf(s).length === a.length || undefined, 10_000, 'the first chunk');
    // Live: bytes published after the client connected arrive on the open stream.
    const b = Buffer.from('€ and more\n');
    await publishChunk(commandId, a.length, b);
    await waitFor(() => bytesOf(s).length === a.length + b.length || undefined, 10_000, 'the live chunk');
    expect(endOf(s)).toBeUndefined();
    await publishExit(commandId, a.length + b.length);
    await s.ended;
    expect(bytesOf(s).equals(Buffer.concat([a, b]))).toBe(true);
    expect(endOf(s)!.data).toMatchObject({ nextOffset: a.length + b.length, complete: true, exit: { exitCode: 0 } });
    // Every event's id is the byte offset after it: the resume point.
    expect(s.events.map((e) => Number(e.id))).toEqual([a.length, a.length + b.length, a.length + b.length]);

    // Resuming from the middle of a chunk (Last-Event-ID wins over ?offset=) gives exactly the rest.
    const again = await follow(taskId, '?offset=0', { 'last-event-id': '3' });
    await again.ended;
    expect(bytesOf(again).equals(Buffer.concat([a, b]).subarray(3))).toBe(true);
  });

  it('reports the range the output cap dropped and goes on with the tail', async () => {
    const conv = await h.conversation(alice);
    const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    const commandId = `cmd-${taskId}`;
    await publishChunk(commandId, 0, Buffer.from('head'));
    await publishMarker(commandId, 4, 100);
    await publishChunk(commandId, 100, Buffer.from('tail'));
    await publishExit(commandId, 104);
    const s = await follow(taskId);
    await s.ended;
    expect(s.events.map((e) => [e.event, e.id])).toEqual([
      ['chunk', '4'],
      ['truncated', '100'],
      ['chunk', '104'],
      ['end', '104'],
    ]);
    expect(bytesOf(s).toString()).toBe('headtail');
    // Resuming inside the gap continues with the tail.
    const inGap = await follow(taskId, '?offset=50');
    await inGap.ended;
    expect(bytesOf(inGap).toString()).toBe('tail');
  });

  it('ends, incomplete, when the result settles without an exit record (host lost)', async () => {
    const conv = await h.conversation(alice);
    const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice', status: 'running' });
    const commandId = `cmd-${taskId}`;
    await publishChunk(commandId, 0, Buffer.from('partial'));
    const s = await follow(taskId);
    await waitFor(() => bytesOf(s).length === 7 || undefined, 10_000, 'the chunk');
    await h.pool.query(`UPDATE tasks SET status = 'lost', result_state = 'unavailable' WHERE task_id = $1`, [taskId]);
    await s.ended;
    expect(endOf(s)!.data).toMatchObject({ nextOffset: 7, complete: false, resultState: 'unavailable', exit: null });
  });

  it('hides other tenants’ and non-members’ tasks (404) and refuses a bad offset (422)', async () => {
    const conv = await h.conversation(alice);
    const taskId = await insertTask(h, { conversationId: conv, tenant: 'acme', userId: 'alice' });
    for (const who of [['mallory', 'evil'], ['bob', 'acme'], ['alice', 'evil']] as [string, string][]) {
      expectError(await h.call('GET', `/v1/tasks/${taskId}/output/follow`, who), 404, 'not_found');
    }
    for (const bad of ['-1', 'x', '1.5']) expectError(await h.call('GET', `/v1/tasks/${taskId}/output/follow?offset=${bad}`, alice), 422, 'validation');
    expectError(await h.call('GET', `/v1/tasks/${taskId}/output/follow`, null), 401, 'unauthorized');
  });
});
