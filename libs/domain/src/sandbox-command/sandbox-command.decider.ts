import { assertNever, IllegalState, ValidationError, type Decider } from '@handplane/kernel';
import type { MarkDelivered, MarkReadable, MarkUnavailable, RecordExit, SandboxCommandCommand } from './sandbox-command.commands';
import type { CommandExited, CommandResultDelivered, OutputTruncation, SandboxCommandEvent } from './sandbox-command.events';

/** The runner's exit record as the aggregate remembers it. */
export type ExitFacts = CommandExited['data'];

/**
 * Result state of one command (DESIGN.md §3): `none` (nothing known yet; the ingestor's cursor says
 * `result_pending`), `result_pending` (exit recorded, bytes not yet all durable), `readable`,
 * `delivered`, or `unavailable` (the runner was lost; the durable prefix stays readable).
 */
export type SandboxCommandState =
  | { status: 'none' }
  | { status: 'result_pending'; exit: ExitFacts }
  | { status: 'readable'; exit: ExitFacts; outputBytes: number; truncation: OutputTruncation | null }
  | { status: 'delivered'; exit: ExitFacts; outputBytes: number; truncation: OutputTruncation | null; deliveredTo: CommandResultDelivered['data']['deliveredTo'] }
  | {
      status: 'unavailable';
      commandId: string;
      taskId: string;
      attempt: number;
      exit: ExitFacts | null;
      durableBytes: number;
      reason: string;
      truncation: OutputTruncation | null;
    };

const isCount = (n: number) => Number.isSafeInteger(n) && n >= 0;

/** What is wrong with a truncation inside `[0, limit)`: a dropped range is never empty and never past the end. */
function truncationIssues(t: OutputTruncation | undefined, limit: number): string[] {
  if (t === undefined) return [];
  if (![t.droppedFrom, t.droppedTo, t.droppedBytes].every(isCount)) return ['truncation offsets must be non-negative integers'];
  const issues: string[] = [];
  if (t.droppedFrom >= t.droppedTo) issues.push('a truncation drops at least one byte (droppedFrom < droppedTo)');
  if (t.droppedTo > limit) issues.push(`truncation ends at ${t.droppedTo}, past ${limit}`);
  if (t.droppedBytes !== t.droppedTo - t.droppedFrom) issues.push('droppedBytes must equal droppedTo - droppedFrom');
  return issues;
}

const sameTruncation = (a: OutputTruncation | null, b: OutputTruncation | undefined) =>
  (a === null && b === undefined) || (a !== null && b !== undefined && a.droppedFrom === b.droppedFrom && a.droppedTo === b.droppedTo);

function evolve(state: SandboxCommandState, event: SandboxCommandEvent): SandboxCommandState {
  // The stream is the truth: an event that does not fit the state (never produced by decide) leaves it as is.
  switch (event.type) {
    case 'CommandExited':
      return state.status === 'none' ? { status: 'result_pending', exit: event.data } : state;
    case 'CommandResultReadable':
      return state.status === 'result_pending' ? { status: 'readable', exit: state.exit, outputBytes: event.data.outputBytes, truncation: event.data.truncation ?? null } : state;
    case 'CommandResultUnavailable': {
      if (state.status !== 'none' && state.status !== 'result_pending') return state;
      const { commandId, taskId, attempt, durableBytes, reason } = event.data;
      const exit = state.status === 'result_pending' ? state.exit : null;
      return { status: 'unavailable', commandId, taskId, attempt, exit, durableBytes, reason, truncation: event.data.truncation ?? null };
    }
    case 'CommandResultDelivered':
      return state.status === 'readable' ? { ...state, status: 'delivered', deliveredTo: event.data.deliveredTo } : state;
    default:
      return assertNever(event, 'sandbox command event');
  }
}

function sameExit(a: ExitFacts, b: ExitFacts): boolean {
  return a.commandId === b.commandId && a.endOffset === b.endOffset && a.exitCode === b.exitCode && a.signal === b.signal;
}

function recordExit(c: RecordExit, s: SandboxCommandState): SandboxCommandEvent[] {
  const d = c.data;
  const issues = [
    ...(isCount(d.endOffset) ? [] : ['endOffset must be a non-negative integer']),
    ...(isCount(d.attempt) ? [] : ['attempt must be a non-negative integer']),
    ...(d.exitCode === null || Number.isInteger(d.exitCode) ? [] : ['exitCode must be an integer or null']),
  ];
  if (issues.length) throw new ValidationError('invalid exit record', issues);
  if (s.status === 'none') return [{ type: 'CommandExited', data: { ...d }, metadata: c.metadata }];
  if (s.exit === null) throw new IllegalState(`command ${d.commandId} is already unavailable; its exit can no longer be recorded`);
  if (sameExit(s.exit, d)) return [];
  throw new IllegalState(`command ${d.commandId} already has a different exit record (end offset ${s.exit.endOffset})`);
}

function markReadable(c: MarkReadable, s: SandboxCommandState): SandboxCommandEvent[] {
  const { outputBytes: n, truncation } = c.data;
  const issues = truncationIssues(truncation, n);
  if (issues.length) throw new ValidationError('invalid truncation', issues);
  switch (s.status) {
    case 'none':
      throw new IllegalState('no exit recorded: a result is never readable before its exit');
    case 'result_pending': {
      // Never an empty or partial success: readable means every byte up to the exit record is durable
      // (or named as dropped by the cap: an explicit gap is not a silent cut).
      if (n !== s.exit.endOffset) throw new IllegalState(`only ${n} of ${s.exit.endOffset} bytes are durable: not readable`);
      const data = { commandId: s.exit.commandId, taskId: s.exit.taskId, attempt: s.exit.attempt, outputBytes: n, ...(truncation ? { truncation: { ...truncation } } : {}) };
      return [{ type: 'CommandResultReadable', data, metadata: c.metadata }];
    }
    case 'readable':
    case 'delivered':
      if (n === s.outputBytes && sameTruncation(s.truncation, truncation)) return [];
      throw new IllegalState(`already readable with ${s.outputBytes} bytes${s.truncation ? ` (${s.truncation.droppedBytes} dropped)` : ''}, not ${n}`);
    case 'unavailable':
      throw new IllegalState(`command ${s.commandId} is unavailable: it cannot become readable`);
    default:
      return assertNever(s, 'sandbox command state');
  }
}

function markUnavailable(c: MarkUnavailable, s: SandboxCommandState): SandboxCommandEvent[] {
  const d = c.data;
  if (!isCount(d.durableBytes)) throw new ValidationError('invalid durable byte count', ['durableBytes must be a non-negative integer']);
  const issues = truncationIssues(d.truncation, d.durableBytes);
  if (issues.length) throw new ValidationError('invalid truncation', issues);
  const event = (): SandboxCommandEvent[] => [{ type: 'CommandResultUnavailable', data: { ...d, ...(d.truncation ? { truncation: { ...d.truncation } } : {}) }, metadata: c.metadata }];
  switch (s.status) {
    case 'none':
      return event();
    case 'result_pending':
      if (d.commandId !== s.exit.commandId) throw new IllegalState(`command id ${d.commandId} does not match ${s.exit.commandId}`);
      if (d.durableBytes >= s.exit.endOffset) throw new IllegalState(`all ${s.exit.endOffset} bytes are durable: mark the result readable instead`);
      return event();
    case 'readable':
    case 'delivered':
      throw new IllegalState(`command ${s.exit.commandId} is already readable: it cannot become unavailable`);
    case 'unavailable':
      return [];
    default:
      return assertNever(s, 'sandbox command state');
  }
}

function markDelivered(c: MarkDelivered, s: SandboxCommandState): SandboxCommandEvent[] {
  switch (s.status) {
    case 'readable':
      return [{ type: 'CommandResultDelivered', data: { commandId: s.exit.commandId, taskId: s.exit.taskId, attempt: s.exit.attempt, deliveredTo: c.data.deliveredTo }, metadata: c.metadata }];
    case 'delivered':
      return [];
    case 'none':
    case 'result_pending':
      throw new IllegalState('the result is not readable yet: nothing to deliver');
    case 'unavailable':
      throw new IllegalState(`command ${s.commandId} is unavailable: its result cannot be delivered`);
    default:
      return assertNever(s, 'sandbox command state');
  }
}

function decide(command: SandboxCommandCommand, state: SandboxCommandState): SandboxCommandEvent[] {
  switch (command.type) {
    case 'RecordExit':
      return recordExit(command, state);
    case 'MarkReadable':
      return markReadable(command, state);
    case 'MarkUnavailable':
      return markUnavailable(command, state);
    case 'MarkDelivered':
      return markDelivered(command, state);
    default:
      return assertNever(command, 'sandbox command command');
  }
}

/**
 * The SandboxCommand decider: the result state machine of one command's output. Repeated commands
 * are no-ops (`[]`), so a crash between an append and the work after it replays harmlessly.
 */
export const sandboxCommandDecider: Decider<SandboxCommandState, SandboxCommandCommand, SandboxCommandEvent> = {
  initialState: () => ({ status: 'none' }),
  evolve,
  decide,
};
