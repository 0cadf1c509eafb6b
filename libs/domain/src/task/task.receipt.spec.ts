import { fold } from '@handplane/kernel';
import type { TaskCommand } from './task.commands';
import { taskDecider } from './task.decider';
import type { StopReason, TaskEvent, TaskReceipt } from './task.events';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:01.000Z';
const T2 = '2026-01-01T00:01:00.000Z';
const T3 = '2026-01-01T00:02:00.000Z';
const ids = { taskId: 't-1', commandId: 'c-1', attempt: 1 };

const registered: TaskEvent = {
  type: 'TaskRegistered',
  data: { ...ids, conversationId: 'conv-1', tenant: 'acme', userId: 'alice', origin: 'user', command: 'make', cwd: '', env: {}, epoch: 3, foregroundWindowMs: 60_000, timeoutMs: 3_600_000, registeredAt: T0 },
  metadata: { at: T0 },
};
const started: TaskEvent = { type: 'TaskStarted', data: { ...ids, runnerId: 'runner-a', startedAt: T1 }, metadata: { at: T1 } };
const stopRequested = (reason: StopReason, by = 'bob', detail?: string): TaskEvent => ({
  type: 'TaskStopRequested',
  data: { ...ids, epoch: 3, reason, requestedBy: by, requestedAt: T2, ...(detail ? { detail } : {}) },
  metadata: { at: T2 },
});
const finish = (exitCode: number | null, signal: string | null, exitReason?: string, resultState: 'readable' | 'unavailable' = 'readable'): TaskCommand => ({
  type: 'FinishTask',
  data: { attempt: 1, exitCode, signal, resultState, outputBytes: 7, ...(exitReason !== undefined ? { exitReason } : {}) },
  metadata: { at: T3 },
});

/** The receipt the decider puts on TaskFinished. */
function receiptAfter(history: TaskEvent[], c: TaskCommand): TaskReceipt {
  const events = taskDecider.decide(c, fold(taskDecider, history));
  const f = events.find((e) => e.type === 'TaskFinished');
  if (f?.type !== 'TaskFinished' || !f.data.receipt) throw new Error(`no receipt in ${JSON.stringify(events)}`);
  return f.data.receipt;
}

describe('task receipt (issue 10.4)', () => {
  it('an exit by itself: exited with code N, with the evidence', () => {
    const r = receiptAfter([registered, started], finish(2, null, ''));
    expect(r).toEqual({
      outcome: 'exited',
      status: 'failed',
      exitCode: 2,
      signal: null,
      requestedBy: null,
      summary: 'exited with code 2',
      evidence: { runnerId: 'runner-a', epoch: 3, attempt: 1, startedAt: T1, finishedAt: T3, outputBytes: 7, resultState: 'readable', exitReason: '' },
    });
  });

  it.each<[StopReason, string, string]>([
    ['user', 'bob', 'killed by SIGTERM at the request of user bob'],
    ['deadline', 'system:task-coordinator', 'killed by SIGTERM at the request of the deadline'],
    ['stop_all', 'carol', 'killed by SIGTERM at the request of stop-all by carol'],
  ])('a stop (%s): killed by the signal at whose request', (reason, by, summary) => {
    const r = receiptAfter([registered, started, stopRequested(reason, by)], finish(null, 'SIGTERM', 'stopped'));
    expect(r.outcome).toBe('killed');
    expect(r.summary).toBe(summary);
    expect(r.requestedBy).toEqual({ reason, by, at: T2 });
    expect(r.status).toBe(reason === 'deadline' ? 'timed_out' : 'cancelled');
  });

  it('a policy stop names the policy and its detail', () => {
    const r = receiptAfter([registered, started, stopRequested('policy', 'system:budgets', 'budget: conversation runtime 1000 ms')], finish(null, 'SIGKILL', 'killed'));
    expect(r.summary).toBe('killed by SIGKILL by policy (budget: conversation runtime 1000 ms)');
    expect(r.requestedBy?.detail).toBe('budget: conversation runtime 1000 ms');
  });

  it('a signal nobody asked for says so', () => {
    const r = receiptAfter([registered, started], finish(null, 'SIGKILL', ''));
    expect(r).toMatchObject({ outcome: 'killed', status: 'failed', requestedBy: null, summary: 'killed by SIGKILL; nobody in Handplane asked for it' });
  });

  it('an exit while a stop was pending is an exit, and mentions the stop', () => {
    const r = receiptAfter([registered, started, stopRequested('user')], finish(0, null, ''));
    expect(r.outcome).toBe('exited');
    expect(r.summary).toBe('exited with code 0 (a stop at the request of user bob was pending)');
  });

  it('a lost host: lost with its runner id', () => {
    const r = receiptAfter([registered, started], finish(null, null, 'lost: runner restarted', 'unavailable'));
    expect(r).toMatchObject({ outcome: 'lost', status: 'lost', summary: 'lost with its host runner-a (lost: runner restarted)' });
    expect(r.evidence.resultState).toBe('unavailable');
  });

  it('nothing on record: unknown, never a success', () => {
    const r = receiptAfter([registered, started], finish(null, null, ''));
    expect(r.outcome).toBe('unknown');
    expect(r.status).toBe('failed');
  });

  it('a start that failed: not started, with the reason', () => {
    const r = receiptAfter([registered], { type: 'FailStart', data: { reason: 'no runner available', attempt: 1 }, metadata: { at: T1 } });
    expect(r).toMatchObject({ outcome: 'not_started', summary: 'never started: no runner available', evidence: { runnerId: null, startFailure: 'no runner available' } });
  });

  it('a stop before any runner took it: not started, at whose request', () => {
    const r = receiptAfter([registered, stopRequested('user')], { type: 'AbandonStart', data: { reason: 'stopped' }, metadata: { at: T3 } });
    expect(r).toMatchObject({ outcome: 'not_started', status: 'cancelled', requestedBy: { reason: 'user', by: 'bob' } });
    expect(r.summary).toBe('never started: stopped at the request of user bob before any runner took it');
  });

  it('the folded state keeps the policy detail of the stop', () => {
    const s = fold(taskDecider, [registered, started, stopRequested('policy', 'x', 'budget: tenant output 10 bytes')]);
    expect(s.status === 'stopping' && s.stop.detail).toBe('budget: tenant output 10 bytes');
  });
});
