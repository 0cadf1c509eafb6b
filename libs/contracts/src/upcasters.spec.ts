import { decodeConversationEvent, encodeEvent, MalformedEvent, taskStoppingV1 } from './index';

describe('versioned events: an old version is upcast on read, never rewritten', () => {
  const metadata = { at: '2026-01-01T00:00:00.000Z', actor: 'alice' };
  const v1 = { type: 'task.stopping', v: 1, data: { taskId: 't1', commandId: 'c1', reason: 'user' }, metadata };
  const v2 = { type: 'task.stopping', v: 2, data: { taskId: 't1', commandId: 'c1', attempt: 3, reason: 'user', requestedBy: 'bob' }, metadata };

  it('reads a task.stopping v1 as v2: who asked from the actor, attempt unknown', () => {
    const bytes = Buffer.from(JSON.stringify(v1));
    const before = Buffer.from(bytes);
    const e = decodeConversationEvent(bytes);
    expect(e).toEqual({ type: 'task.stopping', v: 2, data: { taskId: 't1', commandId: 'c1', attempt: null, reason: 'user', requestedBy: 'alice' }, metadata });
    // The stored bytes are what they were.
    expect(bytes.equals(before)).toBe(true);
    expect(taskStoppingV1.safeParse(JSON.parse(bytes.toString()).data).success).toBe(true);
  });

  it('reads a v1 without an actor as requested by "unknown"', () => {
    const e = decodeConversationEvent(JSON.stringify({ ...v1, metadata: { at: metadata.at } }));
    expect(e.data).toMatchObject({ requestedBy: 'unknown', attempt: null });
  });

  it('reads v2 as written and writes v2', () => {
    expect(decodeConversationEvent(JSON.stringify(v2))).toEqual(v2);
    const wire = JSON.parse(Buffer.from(encodeEvent({ type: 'task.stopping', data: v2.data, metadata } as never)).toString());
    expect(wire.v).toBe(2);
    // Other types stay at v1.
    expect(JSON.parse(Buffer.from(encodeEvent({ type: 'task.backgrounded', data: { taskId: 't', commandId: 'c' }, metadata } as never)).toString()).v).toBe(1);
  });

  it('refuses a v1 that does not fit v1, and an unknown version', () => {
    expect(() => decodeConversationEvent(JSON.stringify({ ...v1, data: { taskId: 't1' } }))).toThrow(MalformedEvent);
    expect(() => decodeConversationEvent(JSON.stringify({ ...v2, v: 3 }))).toThrow(/invalid event/);
  });
});
