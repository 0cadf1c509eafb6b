import { createLogger } from '@handplane/platform';
import type { ReadOutputResult } from '../model/transcript';
import { SimHost } from '../../../test/adversarial/sim-host';
import type { ToolContext } from './tool';
import { readOutputTool } from './read-output.tool';

/** A finished task whose output lost `[4, 100)` to the output cap: head `head`, tail `tail`. */
class CappedHost extends SimHost {
  async readLog(_commandId: string, offset: number, cap: number) {
    const dropped = { from: 4, to: 100 };
    if (offset >= dropped.from && offset < dropped.to) return { bytes: Buffer.alloc(0), nextOffset: dropped.to, dropped };
    const src = offset < 4 ? Buffer.from('head').subarray(offset) : Buffer.from('tail').subarray(offset - 100);
    const bytes = src.subarray(0, cap);
    return { bytes, nextOffset: offset + bytes.length, dropped };
  }
}

function ctxFor(conversationId: string): ToolContext {
  return {
    conversationId,
    runId: 'run-1',
    userId: 'alice',
    callId: 'call-1',
    at: '2026-01-01T00:00:00.000Z',
    snapshot: undefined as never,
    history: [],
    decide: () => [],
    state: () => undefined as never,
    signal: new AbortController().signal,
  };
}

describe('read_output over a result the output cap truncated', () => {
  const conversations = new Map([['conv-1', { tenant: 'acme', epoch: 1 }]]);

  it('tells the model the dropped range, moves over it, and delivers the result at its end', async () => {
    const host = new CappedHost(() => ({ kind: 'finish', exitCode: 0, output: '' }), conversations);
    const taskId = host.addTask('conv-1', 'make', 'succeeded');
    const t = host.tasks.get(taskId)!;
    Object.assign(t.view, { outputBytes: 104, resultState: 'readable' });
    const tool = readOutputTool({ host, logger: createLogger('test', 'silent'), foregroundWindowMs: 1000, approvalPolicy: { kind: 'none' } as never });
    const read = async (offset: number) => (await tool({ taskId, offset }, ctxFor('conv-1'))).result as ReadOutputResult;

    const head = await read(0);
    expect([head.text, head.nextOffset, head.eof]).toEqual(['head', 4, false]);
    expect(head.dropped).toEqual({ droppedFrom: 4, droppedTo: 100, droppedBytes: 96, note: expect.stringContaining('96 bytes dropped by the output cap') });
    expect(host.delivered.size).toBe(0);

    const gap = await read(head.nextOffset);
    expect([gap.text, gap.bytes, gap.nextOffset, gap.eof]).toEqual(['', 0, 100, false]);

    const tail = await read(gap.nextOffset);
    expect([tail.text, tail.nextOffset, tail.eof]).toEqual(['tail', 104, true]);
    expect([...host.delivered]).toEqual([t.view.commandId]);
  });

  it('does not mark an unavailable result delivered', async () => {
    const host = new SimHost(() => ({ kind: 'finish', exitCode: 0, output: '' }), conversations);
    const taskId = host.addTask('conv-1', 'make', 'lost');
    Object.assign(host.tasks.get(taskId)!.view, { resultState: 'unavailable' });
    const tool = readOutputTool({ host, logger: createLogger('test', 'silent'), foregroundWindowMs: 1000, approvalPolicy: { kind: 'none' } as never });
    const r = (await tool({ taskId }, ctxFor('conv-1'))).result as ReadOutputResult;
    expect(r.eof).toBe(true);
    expect(host.delivered.size).toBe(0);
  });
});
