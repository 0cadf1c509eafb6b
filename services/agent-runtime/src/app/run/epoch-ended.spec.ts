import { conversationRunDecider as decider, type ConversationEvent, type EpochEnded } from '@handplane/domain';
import { emptyCheckpoint, type Checkpoint } from './checkpoint';
import { stoppedCheckpoint } from './epoch-ended';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:09.000Z';
const ended: EpochEnded['data'] = { epoch: 3, nextEpoch: 4, stoppedTaskIds: ['t-1'], stoppedTasks: [{ taskId: 't-1', attempt: 1 }], by: 'bob' };
const fold = (events: ConversationEvent[]) => events.reduce((s, e) => decider.evolve(s, e), decider.initialState());
const started: ConversationEvent = { type: 'run.started', data: { runId: 'run-1', userId: 'alice', trigger: 'message', messageId: 'm1' }, metadata: { at: T0 } };
const waitDeclared: ConversationEvent = { type: 'wait.declared', data: { runId: 'run-1', taskIds: ['t-1'] }, metadata: { at: T0 } };

function running(pendingDone?: number): Checkpoint {
  const cp = emptyCheckpoint();
  const calls = [
    { callId: 'c1', name: 'exec', args: { command: 'make' } },
    { callId: 'c2', name: 'exec', args: { command: 'make test' } },
  ];
  return {
    ...cp,
    seq: 7,
    conv: fold([started, waitDeclared]),
    active: { runId: 'run-1', userId: 'alice', trigger: 'message', messageId: 'm1', step: 2, pending: pendingDone === undefined ? null : { calls, done: pendingDone, snapshot: cp.conv } },
  } as Checkpoint;
}

describe('stoppedCheckpoint (the runtime side of stop-all)', () => {
  it('finishes the active run as stopped, dropping its wait', () => {
    const next = stoppedCheckpoint(running(), ended, T1)!;
    expect(next.active).toBeNull();
    expect(next.conv.status).toBe('idle');
    expect(next.outbox).toEqual([
      { msgId: 'run:run-1:finished', event: { type: 'run.finished', data: { runId: 'run-1', outcome: 'stopped', detail: 'stop-all ended epoch 3' }, metadata: { at: T1, actor: 'bob' } } },
    ]);
  });

  it('answers the tool calls the run had not made yet, so the transcript stays well formed', () => {
    const next = stoppedCheckpoint(running(1), ended, T1)!;
    expect(next.transcript).toEqual([{ kind: 'tool_result', callId: 'c2', name: 'exec', ok: false, result: { error: 'stopped: stop-all ended epoch 3' } }]);
  });

  it('ends the wait of a waiting conversation', () => {
    const finished: ConversationEvent = { type: 'run.finished', data: { runId: 'run-1', outcome: 'waiting' }, metadata: { at: T0 } };
    const cp: Checkpoint = { ...emptyCheckpoint(), conv: fold([started, waitDeclared, finished]) };
    expect(cp.conv.status).toBe('waiting');
    const next = stoppedCheckpoint(cp, ended, T1)!;
    expect(next.conv.status).toBe('idle');
    expect(next.outbox).toEqual([
      { msgId: 'epoch-ended:3:wait-invalidated', event: { type: 'wait.invalidated', data: { reason: 'stop_all', taskIds: ['t-1'] }, metadata: { at: T1, actor: 'bob' } } },
    ]);
  });

  it('has nothing to do for an idle conversation (a repeated epoch.ended changes nothing)', () => {
    expect(stoppedCheckpoint(emptyCheckpoint(), ended, T1)).toBeUndefined();
    expect(stoppedCheckpoint(stoppedCheckpoint(running(), ended, T1)!, ended, T1)).toBeUndefined();
  });
});
