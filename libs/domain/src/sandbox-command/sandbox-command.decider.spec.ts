import { fold, IllegalState, ValidationError } from '@handplane/kernel';
import type { MarkDelivered, MarkReadable, MarkUnavailable, RecordExit, SandboxCommandCommand } from './sandbox-command.commands';
import { sandboxCommandDecider as decider, type SandboxCommandState } from './sandbox-command.decider';
import type { SandboxCommandEvent } from './sandbox-command.events';

const at = '2026-01-01T00:01:00.000Z';
const metadata = { at, actor: 'system:log-ingestor' };
const id = { commandId: 'c1', taskId: 't1', attempt: 1 };
const exitData: RecordExit['data'] = {
  ...id,
  runnerId: 'r1',
  exitCode: 0,
  signal: null,
  endOffset: 600,
  startedAt: '2026-01-01T00:00:00.000Z',
  finishedAt: '2026-01-01T00:00:59.000Z',
  reason: '',
};

const recordExit = (over: Partial<RecordExit['data']> = {}): RecordExit => ({ type: 'RecordExit', data: { ...exitData, ...over }, metadata });
const markReadable = (outputBytes: number, truncation?: MarkReadable['data']['truncation']): MarkReadable => ({ type: 'MarkReadable', data: { outputBytes, ...(truncation ? { truncation } : {}) }, metadata });
const cut = (droppedFrom: number, droppedTo: number, droppedBytes = droppedTo - droppedFrom) => ({ droppedFrom, droppedTo, droppedBytes });
const markUnavailable = (durableBytes: number, over: Partial<MarkUnavailable['data']> = {}): MarkUnavailable => ({
  type: 'MarkUnavailable',
  data: { ...id, durableBytes, reason: 'runner lost', ...over },
  metadata,
});
const markDelivered = (deliveredTo: 'agent' | 'user' = 'agent'): MarkDelivered => ({ type: 'MarkDelivered', data: { deliveredTo }, metadata });

const exited: SandboxCommandEvent = { type: 'CommandExited', data: exitData, metadata };
const readable: SandboxCommandEvent = { type: 'CommandResultReadable', data: { ...id, outputBytes: 600 }, metadata };
const unavailable = (durableBytes: number): SandboxCommandEvent => ({ type: 'CommandResultUnavailable', data: { ...id, durableBytes, reason: 'runner lost' }, metadata });
const delivered: SandboxCommandEvent = { type: 'CommandResultDelivered', data: { ...id, deliveredTo: 'agent' }, metadata };

/** Given a history, when a command is decided, then these events (or this error). */
function given(history: SandboxCommandEvent[]) {
  const state = fold(decider, history);
  return {
    state,
    when: (command: SandboxCommandCommand) => ({
      then: (expected: SandboxCommandEvent[]) => expect(decider.decide(command, state)).toEqual(expected),
      thenThrows: (error: new (...args: never[]) => Error, message?: RegExp) => {
        expect(() => decider.decide(command, state)).toThrow(error);
        if (message) expect(() => decider.decide(command, state)).toThrow(message);
      },
    }),
  };
}

describe('SandboxCommand decider', () => {
  describe('RecordExit', () => {
    it('records the exit of a fresh command', () => given([]).when(recordExit()).then([exited]));
    it('records an exit without an exit code (the runner ended it)', () => {
      const e = recordExit({ exitCode: null, signal: 'SIGKILL', reason: 'stopped' });
      given([]).when(e).then([{ type: 'CommandExited', data: e.data, metadata }]);
    });
    it('is a no-op when the same exit is recorded again', () => given([exited]).when(recordExit()).then([]));
    it('is a no-op after the result became readable or delivered', () => {
      given([exited, readable]).when(recordExit()).then([]);
      given([exited, readable, delivered]).when(recordExit()).then([]);
    });
    it('refuses a different exit record for the same command', () => given([exited]).when(recordExit({ endOffset: 601 })).thenThrows(IllegalState, /different exit/));
    it('refuses an exit once the result is unavailable', () => given([unavailable(10)]).when(recordExit()).thenThrows(IllegalState, /unavailable/));
    it('rejects a negative or fractional end offset', () => {
      given([]).when(recordExit({ endOffset: -1 })).thenThrows(ValidationError);
      given([]).when(recordExit({ endOffset: 1.5 })).thenThrows(ValidationError);
    });
  });

  describe('MarkReadable', () => {
    it('makes the result readable when every byte up to the exit is durable', () => given([exited]).when(markReadable(600)).then([readable]));
    it('makes an empty output readable when the exit says 0 bytes', () => {
      const empty: SandboxCommandEvent = { type: 'CommandExited', data: { ...exitData, endOffset: 0 }, metadata };
      given([empty]).when(markReadable(0)).then([{ type: 'CommandResultReadable', data: { ...id, outputBytes: 0 }, metadata }]);
    });
    it('never declares a partial success', () => given([exited]).when(markReadable(599)).thenThrows(IllegalState, /599 of 600/));
    it('never declares an empty success', () => given([exited]).when(markReadable(0)).thenThrows(IllegalState));
    it('refuses before the exit is recorded', () => given([]).when(markReadable(0)).thenThrows(IllegalState, /no exit recorded/));
    it('is a no-op when repeated', () => {
      given([exited, readable]).when(markReadable(600)).then([]);
      given([exited, readable, delivered]).when(markReadable(600)).then([]);
    });
    it('refuses a repeat with another byte count', () => given([exited, readable]).when(markReadable(10)).thenThrows(IllegalState));
    it('refuses once unavailable', () => given([unavailable(5)]).when(markReadable(600)).thenThrows(IllegalState, /unavailable/));

    describe('with a truncation (the output passed the cap)', () => {
      const truncated: SandboxCommandEvent = { type: 'CommandResultReadable', data: { ...id, outputBytes: 600, truncation: cut(100, 500) }, metadata };
      it('records the dropped range in the readable event', () => given([exited]).when(markReadable(600, cut(100, 500))).then([truncated]));
      it('still needs the whole length up to the exit record', () => given([exited]).when(markReadable(500, cut(100, 500))).thenThrows(IllegalState, /500 of 600/));
      it('rejects an empty, inverted, miscounted or out-of-range dropped range', () => {
        given([exited]).when(markReadable(600, cut(100, 100))).thenThrows(ValidationError);
        given([exited]).when(markReadable(600, cut(300, 200))).thenThrows(ValidationError);
        given([exited]).when(markReadable(600, cut(100, 500, 7))).thenThrows(ValidationError);
        given([exited]).when(markReadable(600, cut(100, 601))).thenThrows(ValidationError);
        given([exited]).when(markReadable(600, cut(-1, 5))).thenThrows(ValidationError);
      });
      it('is a no-op when repeated with the same range, and refuses another range', () => {
        given([exited, truncated]).when(markReadable(600, cut(100, 500))).then([]);
        given([exited, truncated]).when(markReadable(600, cut(100, 400))).thenThrows(IllegalState, /400 dropped/);
        given([exited, truncated]).when(markReadable(600)).thenThrows(IllegalState);
        given([exited, readable]).when(markReadable(600, cut(100, 500))).thenThrows(IllegalState);
      });
      it('keeps the range through delivery', () => {
        const s = fold(decider, [exited, truncated, delivered]);
        expect(s).toMatchObject({ status: 'delivered', outputBytes: 600, truncation: cut(100, 500) });
      });
    });
  });

  describe('MarkUnavailable', () => {
    it('marks a command with no exit record unavailable, keeping the durable prefix', () => given([]).when(markUnavailable(123)).then([unavailable(123)]));
    it('marks a command whose exit is recorded but whose bytes are missing unavailable', () => given([exited]).when(markUnavailable(100)).then([unavailable(100)]));
    it('refuses when every byte is durable (that result is readable)', () => given([exited]).when(markUnavailable(600)).thenThrows(IllegalState, /readable instead/));
    it('refuses for another command id', () => given([exited]).when(markUnavailable(1, { commandId: 'other' })).thenThrows(IllegalState));
    it('never downgrades a readable or delivered result', () => {
      given([exited, readable]).when(markUnavailable(0)).thenThrows(IllegalState, /already readable/);
      given([exited, readable, delivered]).when(markUnavailable(0)).thenThrows(IllegalState);
    });
    it('is a no-op when repeated', () => given([unavailable(5)]).when(markUnavailable(5)).then([]));
    it('rejects a negative byte count', () => given([]).when(markUnavailable(-1)).thenThrows(ValidationError));
    it('keeps the range the cap dropped before the runner was lost', () => {
      const e = markUnavailable(900, { truncation: cut(100, 900) });
      given([]).when(e).then([{ type: 'CommandResultUnavailable', data: { ...e.data }, metadata }]);
      given([]).when(markUnavailable(800, { truncation: cut(100, 900) })).thenThrows(ValidationError);
      expect(fold(decider, decider.decide(e, decider.initialState()))).toMatchObject({ status: 'unavailable', durableBytes: 900, truncation: cut(100, 900) });
    });
  });

  describe('MarkDelivered', () => {
    it('delivers a readable result', () => given([exited, readable]).when(markDelivered('agent')).then([delivered]));
    it('is a no-op when repeated', () => given([exited, readable, delivered]).when(markDelivered('user')).then([]));
    it('refuses before the result is readable', () => {
      given([]).when(markDelivered()).thenThrows(IllegalState, /not readable/);
      given([exited]).when(markDelivered()).thenThrows(IllegalState, /not readable/);
    });
    it('refuses an unavailable result', () => given([unavailable(3)]).when(markDelivered()).thenThrows(IllegalState, /unavailable/));
  });

  describe('evolve', () => {
    it('walks none → result_pending → readable → delivered', () => {
      const states = [exited, readable, delivered].reduce<SandboxCommandState[]>((acc, e) => [...acc, decider.evolve(acc[acc.length - 1]!, e)], [decider.initialState()]);
      expect(states.map((s) => s.status)).toEqual(['none', 'result_pending', 'readable', 'delivered']);
    });
    it('keeps the exit and the durable prefix of an unavailable result', () => {
      expect(fold(decider, [exited, unavailable(100)])).toEqual({ status: 'unavailable', ...id, exit: exitData, durableBytes: 100, reason: 'runner lost', truncation: null });
      expect(fold(decider, [unavailable(7)])).toMatchObject({ status: 'unavailable', exit: null, durableBytes: 7 });
    });
    it('ignores an event that does not fit the state', () => expect(fold(decider, [readable])).toEqual({ status: 'none' }));
  });
});
