import { Conflict, fold, IllegalState, NotFound } from '@handplane/kernel';
import type { FailStart, FinishTask, TaskCommand } from './task.commands';
import { finishedStatus, taskDecider, type TaskState } from './task.decider';
import type { StopReason, TaskEvent, TaskFinished } from './task.events';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:00:01.000Z';
const T2 = '2026-01-01T00:01:00.000Z';
const T3 = '2026-01-01T00:02:00.000Z';
const ids = { taskId: 't-1', commandId: 'c-1', attempt: 1 };

const registration = {
  ...ids,
  conversationId: 'conv-1',
  tenant: 'acme',
  userId: 'alice',
  origin: 'user' as const,
  command: 'make test',
  cwd: '',
  env: { CI: '1' },
  epoch: 3,
  foregroundWindowMs: 60_000,
  timeoutMs: 3_600_000,
};

// Commands
const registerTask = (over: Partial<typeof registration> = {}): TaskCommand => ({ type: 'RegisterTask', data: { ...registration, ...over }, metadata: { at: T0, actor: 'alice' } });
const startTask = (runnerId = 'r-1', attempt = 1): TaskCommand => ({ type: 'StartTask', data: { runnerId, attempt }, metadata: { at: T1 } });
const failStart = (reason = 'no runner available', over: Partial<FailStart['data']> = {}): TaskCommand => ({ type: 'FailStart', data: { reason, attempt: 1, ...over }, metadata: { at: T1 } });
const backgroundTask: TaskCommand = { type: 'BackgroundTask', data: {}, metadata: { at: T2 } };
const requestStop = (reason: StopReason = 'user', attempt?: number): TaskCommand => ({
  type: 'RequestStop',
  data: { reason, requestedBy: 'bob', ...(attempt === undefined ? {} : { attempt }) },
  metadata: { at: T2 },
});
const finishTask = (r: Partial<FinishTask['data']> = {}): TaskCommand => ({
  type: 'FinishTask',
  data: { ...r, attempt: r.attempt ?? 1, exitCode: r.exitCode === undefined ? 0 : r.exitCode, signal: r.signal ?? null, resultState: r.resultState ?? 'readable', outputBytes: r.outputBytes ?? 42 },
  metadata: { at: T3 },
});

// Events
const registered: TaskEvent = { type: 'TaskRegistered', data: { ...registration, registeredAt: T0 }, metadata: { at: T0, actor: 'alice' } };
const started: TaskEvent = { type: 'TaskStarted', data: { ...ids, runnerId: 'r-1', startedAt: T1 }, metadata: { at: T1 } };
const startFailed: TaskEvent = { type: 'TaskStartFailed', data: { ...ids, reason: 'no runner available', failedAt: T1 }, metadata: { at: T1 } };
const backgrounded: TaskEvent = { type: 'TaskBackgrounded', data: { ...ids, backgroundedAt: T2 }, metadata: { at: T2 } };
const stopRequested = (reason: StopReason = 'user'): TaskEvent => ({
  type: 'TaskStopRequested',
  data: { ...ids, epoch: 3, reason, requestedBy: 'bob', requestedAt: T2 },
  metadata: { at: T2 },
});
const finished = (d: Partial<TaskFinished['data']> = {}, at = T3): TaskEvent => ({
  type: 'TaskFinished',
  data: { ...ids, status: 'succeeded', exitCode: 0, signal: null, resultState: 'readable', outputBytes: 42, finishedAt: at, ...d },
  metadata: { at },
});
const retriedEvent = (reason = 'runner lost', at = T3): TaskEvent => ({
  type: 'TaskRetried',
  data: { taskId: 't-1', previousCommandId: 'c-1', previousAttempt: 1, commandId: 'c-2', attempt: 2, reason, retriedAt: at },
  metadata: { at },
});
const startFailedFinish = finished({ status: 'failed', exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 }, T1);

const withoutReceipt = (e: TaskEvent): TaskEvent => {
  if (e.type !== 'TaskFinished') return e;
  const { receipt: _r, ...data } = e.data;
  void _r;
  return { ...e, data };
};

/** given(history).when(command): the events decided, or the error thrown. */
function given(...history: TaskEvent[]) {
  const state: TaskState = fold(taskDecider, history);
  return {
    state,
    when: (command: TaskCommand) => ({
      // Receipts are specified in task.receipt.spec.ts; here only the events' other fields are compared.
      then: (...expected: TaskEvent[]) => expect(taskDecider.decide(command, state).map(withoutReceipt)).toEqual(expected),
      thenThrows: (error: new (...a: never[]) => Error, message?: RegExp) => {
        expect(() => taskDecider.decide(command, state)).toThrow(error);
        if (message) expect(() => taskDecider.decide(command, state)).toThrow(message);
      },
    }),
  };
}

describe('task decider', () => {
  describe('RegisterTask', () => {
    it('registers a new task at the command time', () => given().when(registerTask()).then(registered));
    it('is a no-op when the same request registers again', () => given(registered).when(registerTask()).then());
    it('is a no-op even after the task moved on', () => given(registered, started, finished()).when(registerTask()).then());
    it('refuses a different task under the same id', () => given(registered).when(registerTask({ command: 'rm -rf /' })).thenThrows(IllegalState, /different task/));
    it('refuses the same id from another conversation', () => given(registered).when(registerTask({ conversationId: 'conv-2' })).thenThrows(IllegalState));
    it('leaves the env out of the state', () => {
      const s = given(registered).state;
      expect(s.status).toBe('starting');
      expect(JSON.stringify(s)).not.toContain('CI');
    });
  });

  describe('StartTask', () => {
    it('starts a starting task on the runner', () => given(registered).when(startTask()).then(started));
    it('is a no-op when the same runner starts it again', () => given(registered, started).when(startTask()).then());
    it('refuses a second runner', () => given(registered, started).when(startTask('r-2')).thenThrows(IllegalState, /r-1/));
    it('refuses an unknown task', () => given().when(startTask()).thenThrows(NotFound));
    it('refuses a finished task', () => given(registered, started, finished()).when(startTask('r-2')).thenThrows(IllegalState, /finished/));
    it('refuses a task whose start failed', () => given(registered, startFailed).when(startTask()).thenThrows(IllegalState, /failed/));
    it('records the runner of a task stopped while starting, which stays stopping', () => {
      given(registered, stopRequested()).when(startTask()).then(started);
      const s = given(registered, stopRequested(), started).state;
      expect(s).toMatchObject({ status: 'stopping', runnerId: 'r-1', startedAt: T1 });
    });
  });

  describe('FailStart', () => {
    it('fails a starting task and finishes it as failed with nothing to read', () => given(registered).when(failStart()).then(startFailed, startFailedFinish));
    it('is a no-op once the failed start is finished', () => given(registered, startFailed, startFailedFinish).when(failStart()).then());
    it('only finishes when the start failure was recorded without its finish', () => given(registered, startFailed).when(failStart()).then(startFailedFinish));
    it('refuses a started task', () => given(registered, started).when(failStart()).thenThrows(IllegalState, /started/));
    it('refuses a task that finished normally', () => given(registered, started, finished()).when(failStart()).thenThrows(IllegalState));
    it('refuses an unknown task', () => given().when(failStart()).thenThrows(NotFound));
    it('ends as failed, not starting', () => expect(given(registered, startFailed, startFailedFinish).state).toMatchObject({ status: 'failed', startFailure: 'no runner available' }));
  });

  describe('BackgroundTask', () => {
    it('backgrounds a running task', () => given(registered, started).when(backgroundTask).then(backgrounded));
    it('is a no-op when already in the background', () => given(registered, started, backgrounded).when(backgroundTask).then());
    it('backgrounds a task that is stopping but still running', () => given(registered, started, stopRequested()).when(backgroundTask).then(backgrounded));
    it('refuses a task that has not started', () => given(registered).when(backgroundTask).thenThrows(IllegalState, /not started/));
    it('refuses a finished task', () => given(registered, started, finished()).when(backgroundTask).thenThrows(IllegalState, /finished/));
    it('refuses an unknown task', () => given().when(backgroundTask).thenThrows(NotFound));
    it('sets the background flag', () => expect(given(registered, started, backgrounded).state).toMatchObject({ status: 'running', background: true }));
  });

  describe('RequestStop', () => {
    it('stops a running task with the epoch it belongs to', () => given(registered, started).when(requestStop()).then(stopRequested()));
    it('stops a task that is still starting', () => given(registered).when(requestStop('stop_all')).then(stopRequested('stop_all')));
    it('accepts the current attempt', () => given(registered, started).when(requestStop('user', 1)).then(stopRequested()));
    it('refuses a stale attempt as a conflict', () => given(registered, started).when(requestStop('user', 2)).thenThrows(Conflict, /attempt 2/));
    it('is a no-op when already stopping', () => given(registered, started, stopRequested()).when(requestStop('stop_all')).then());
    it('refuses a finished task', () => given(registered, started, finished()).when(requestStop()).thenThrows(IllegalState, /succeeded/));
    it('refuses an unknown task', () => given().when(requestStop()).thenThrows(NotFound));
    it('moves the task to stopping', () => expect(given(registered, started, stopRequested('deadline')).state).toMatchObject({ status: 'stopping', stop: { reason: 'deadline' } }));
  });

  describe('FinishTask', () => {
    it('exit 0 → succeeded', () => given(registered, started).when(finishTask({ exitCode: 0 })).then(finished()));
    it('non-zero exit → failed', () => given(registered, started, backgrounded).when(finishTask({ exitCode: 2 })).then(finished({ status: 'failed', exitCode: 2 })));
    it('a signal without a stop → failed', () =>
      given(registered, started).when(finishTask({ exitCode: null, signal: 'SIGKILL' })).then(finished({ status: 'failed', exitCode: null, signal: 'SIGKILL' })));
    it.each<[StopReason, string]>([
      ['user', 'cancelled'],
      ['stop_all', 'cancelled'],
      ['policy', 'cancelled'],
      ['deadline', 'timed_out'],
    ])('a signal after a %s stop → %s', (reason, status) =>
      given(registered, started, stopRequested(reason))
        .when(finishTask({ exitCode: null, signal: 'SIGTERM' }))
        .then(finished({ status: status as TaskFinished['data']['status'], exitCode: null, signal: 'SIGTERM' })));
    it('exit 0 after a stop request → succeeded (it finished before the signal)', () => given(registered, started, stopRequested()).when(finishTask({ exitCode: 0 })).then(finished()));
    it('unavailable with no exit information → lost', () =>
      given(registered, started)
        .when(finishTask({ exitCode: null, resultState: 'unavailable', outputBytes: 7 }))
        .then(finished({ status: 'lost', exitCode: null, resultState: 'unavailable', outputBytes: 7 })));
    it('unavailable with an exit code keeps the exit status', () =>
      given(registered, started).when(finishTask({ exitCode: 1, resultState: 'unavailable' })).then(finished({ status: 'failed', exitCode: 1, resultState: 'unavailable' })));
    it('is a no-op once finished, whatever the repeat says', () => given(registered, started, finished()).when(finishTask({ exitCode: 1 })).then());
    it('refuses a task that has not started', () => given(registered).when(finishTask()).thenThrows(IllegalState, /not started/));
    it('refuses an unknown task', () => given().when(finishTask()).thenThrows(NotFound));
    it('reaches the terminal state with the result', () =>
      expect(given(registered, started, backgrounded, finished({ exitCode: 0, outputBytes: 9 })).state).toMatchObject({
        status: 'succeeded',
        background: true,
        runnerId: 'r-1',
        exitCode: 0,
        resultState: 'readable',
        outputBytes: 9,
        finishedAt: T3,
      }));
  });

  describe('attempt fences', () => {
    it('refuses to start an attempt that is not the current one', () => given(registered).when(startTask('r-1', 2)).thenThrows(Conflict, /attempt 2/));
    it('refuses to fail the start of another attempt', () => given(registered).when(failStart('x', { attempt: 2 })).thenThrows(Conflict));
    it('refuses to finish another attempt', () => given(registered, started).when(finishTask({ attempt: 2 })).thenThrows(Conflict));
    it('ignores events of an earlier attempt when folding', () => {
      const late: TaskEvent = { ...started, data: { ...started.data, runnerId: 'r-old' } };
      expect(given(registered, startFailed, retriedEvent(), late).state).toMatchObject({ status: 'starting', runnerId: null, task: { attempt: 2, commandId: 'c-2' } });
    });
  });

  describe('retries (policy in the command)', () => {
    const retry = { maxAttempts: 3, nextCommandId: 'c-2' };
    it('a transient start failure with attempts left starts attempt 2 under the same task id', () =>
      given(registered).when(failStart('no runner available', { retry })).then(startFailed, retriedEvent('start failed: no runner available', T1)));
    it('a start failure on the last attempt fails the task', () =>
      given(registered, startFailed, retriedEvent('start failed: no runner available', T1))
        .when(failStart('no runner available', { attempt: 2, retry: { maxAttempts: 2, nextCommandId: 'c-3' } }))
        .then(
          { ...startFailed, data: { ...startFailed.data, commandId: 'c-2', attempt: 2 } },
          finished({ commandId: 'c-2', attempt: 2, status: 'failed', exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 }, T1),
        ));
    it('a failure recorded without its retry only needs the retry', () => given(registered, startFailed).when(failStart('other', { retry })).then(retriedEvent('start failed: no runner available', T1)));
    it('a lost attempt is retried', () =>
      given(registered, started, backgrounded).when(finishTask({ exitCode: null, resultState: 'unavailable', outputBytes: 7, retry })).then(retriedEvent('runner lost', T3)));
    it('an attempt the runner lost in a restart is retried', () =>
      given(registered, started).when(finishTask({ exitCode: null, resultState: 'readable', exitReason: 'lost: runner restarted', retry })).then(retriedEvent('runner lost', T3)));
    it('a lost attempt is not retried past the maximum', () =>
      given(registered, started)
        .when(finishTask({ exitCode: null, resultState: 'unavailable', outputBytes: 0, retry: { maxAttempts: 1, nextCommandId: 'c-2' } }))
        .then(finished({ status: 'lost', exitCode: null, resultState: 'unavailable', outputBytes: 0 })));
    it('a lost attempt that was being stopped is not retried', () =>
      given(registered, started, stopRequested()).when(finishTask({ exitCode: null, resultState: 'unavailable', outputBytes: 0, retry })).then(finished({ status: 'lost', exitCode: null, resultState: 'unavailable', outputBytes: 0 })));
    it('a failure is never retried', () => given(registered, started).when(finishTask({ exitCode: 1, retry })).then(finished({ status: 'failed', exitCode: 1 })));
    it('refuses to retry under the same command id', () =>
      given(registered, started).when(finishTask({ exitCode: null, resultState: 'unavailable', retry: { maxAttempts: 2, nextCommandId: 'c-1' } })).thenThrows(IllegalState, /new command id/));
    it('attempt 2 starts, runs and finishes as itself', () => {
      const h = [registered, started, retriedEvent('runner lost', T3)];
      expect(given(...h).state).toMatchObject({ status: 'starting', background: false, task: { commandId: 'c-2', attempt: 2, epoch: 3 } });
      given(...h).when(startTask('r-2', 2)).then({ ...started, data: { ...started.data, commandId: 'c-2', attempt: 2, runnerId: 'r-2' } });
    });
    it('a retried request id registers nothing new', () => given(registered, started, retriedEvent()).when(registerTask()).then());
  });

  describe('stop signals and stops before the start', () => {
    const signal = (over: Partial<{ attempt: number; runnerId: string; outcome: 'delivered' | 'already_exited' }> = {}): TaskCommand => ({
      type: 'RecordStopSignal',
      data: { attempt: 1, runnerId: 'r-1', outcome: 'delivered', ...over },
      metadata: { at: T2 },
    });
    const signalled: TaskEvent = { type: 'TaskStopSignalled', data: { ...ids, runnerId: 'r-1', outcome: 'delivered', signalledAt: T2 }, metadata: { at: T2 } };
    const abandon: TaskCommand = { type: 'AbandonStart', data: { reason: 'stopped before any runner took it' }, metadata: { at: T2 } };
    it('records the runner acknowledgement once', () => {
      given(registered, started, stopRequested()).when(signal()).then(signalled);
      given(registered, started, stopRequested(), signalled).when(signal()).then();
      expect(given(registered, started, stopRequested(), signalled).state).toMatchObject({ status: 'stopping', stop: { reason: 'user', signalledAt: T2 } });
    });
    it('refuses a signal of another attempt', () => given(registered, started, stopRequested()).when(signal({ attempt: 2 })).thenThrows(Conflict));
    it('refuses a signal nobody asked for', () => given(registered, started).when(signal()).thenThrows(IllegalState, /no stop/));
    it('refuses a signal to another runner', () => given(registered, started, stopRequested()).when(signal({ runnerId: 'r-9' })).thenThrows(IllegalState, /r-9/));
    it('has nothing to record once the task finished', () => given(registered, started, stopRequested(), finished({ status: 'cancelled' })).when(signal()).then());
    it('a task stopped before any runner took it ends as cancelled without having run', () =>
      given(registered, stopRequested('stop_all')).when(abandon).then(finished({ status: 'cancelled', exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 }, T2)));
    it('refuses to abandon a task a runner started', () => given(registered, stopRequested(), started).when(abandon).thenThrows(IllegalState, /r-1/));
    it('refuses to abandon a task nobody stopped', () => given(registered).when(abandon).thenThrows(IllegalState, /no stop/));
    it('a start failure of a task being stopped ends it as the stop says', () =>
      given(registered, stopRequested('user'))
        .when(failStart('no runner available', { retry: { maxAttempts: 3, nextCommandId: 'c-2' } }))
        .then(startFailed, finished({ status: 'cancelled', exitCode: null, signal: null, resultState: 'unavailable', outputBytes: 0 }, T1)));
  });

  describe('exit reasons', () => {
    it('the runner backstop (timeout) → timed_out', () =>
      given(registered, started).when(finishTask({ exitCode: null, signal: 'SIGTERM', exitReason: 'timeout' })).then(finished({ status: 'timed_out', exitCode: null, signal: 'SIGTERM' })));
    it('a process that handled SIGTERM and exited by itself after our stop → cancelled', () =>
      given(registered, started, stopRequested()).when(finishTask({ exitCode: 143, exitReason: 'stopped' })).then(finished({ status: 'cancelled', exitCode: 143 })));
    it('a deadline stop the process survived until SIGKILL → timed_out', () =>
      given(registered, started, stopRequested('deadline')).when(finishTask({ exitCode: null, signal: 'SIGKILL', exitReason: 'stopped' })).then(finished({ status: 'timed_out', exitCode: null, signal: 'SIGKILL' })));
    it('a runner restart without a retry policy → lost', () =>
      given(registered, started).when(finishTask({ exitCode: null, exitReason: 'lost: runner restarted before the command finished' })).then(finished({ status: 'lost', exitCode: null })));
  });

  describe('finishedStatus', () => {
    it('readable with no exit information is a failure, never a success', () =>
      expect(finishedStatus(null, { exitCode: null, signal: null, resultState: 'readable' })).toBe('failed'));
  });

  describe('evolve', () => {
    it('ignores a duplicate registration', () => {
      const s = given(registered, started, { ...registered, data: { ...registered.data, command: 'other' } } as TaskEvent).state;
      expect(s).toMatchObject({ status: 'running', task: { command: 'make test' } });
    });
    it('ignores events before registration', () => expect(given(started, backgrounded).state).toEqual({ status: 'none' }));
  });
});
