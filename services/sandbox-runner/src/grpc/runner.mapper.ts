import { ValidationError } from '@handplane/kernel';
import { CommandState, OutputStream, SignalKind, SignalOutcome, type CommandStatus, type ExitRecord, type LogRecord } from '@handplane/proto';
import type { CommandView, ExitInfo, LogItem, SignalKind as Kind } from '../app/types';

/** The one place where runner domain values and proto messages meet. */

export function toExitRecord(e: ExitInfo): ExitRecord {
  return {
    ...(e.exitCode === null ? {} : { exitCode: e.exitCode }),
    signal: e.signal,
    endOffset: e.endOffset,
    startedAtMs: e.startedAtMs,
    finishedAtMs: e.finishedAtMs,
    reason: e.reason,
  };
}

const STATE = { running: CommandState.COMMAND_STATE_RUNNING, stopping: CommandState.COMMAND_STATE_STOPPING, exited: CommandState.COMMAND_STATE_EXITED } as const;

export function toCommandStatus(v: CommandView, runnerId: string): CommandStatus {
  return {
    commandId: v.commandId,
    taskId: v.taskId,
    conversationId: v.conversationId,
    generation: { epoch: v.generation.epoch, attempt: v.generation.attempt },
    state: STATE[v.state],
    startedAtMs: v.startedAtMs,
    outputBytes: v.outputBytes,
    ackedOffset: v.ackedOffset,
    exit: v.exit ? toExitRecord(v.exit) : undefined,
    runnerId,
  };
}

export function toLogRecord(item: LogItem): LogRecord {
  if (item.type === 'exit') return { record: { $case: 'exit', value: toExitRecord(item.exit) } };
  const stream = item.stream === 'stdout' ? OutputStream.OUTPUT_STREAM_STDOUT : OutputStream.OUTPUT_STREAM_STDERR;
  return { record: { $case: 'chunk', value: { offset: item.offset, stream, data: item.data } } };
}

export function toSignalKind(kind: SignalKind): Kind {
  if (kind === SignalKind.SIGNAL_KIND_STOP) return 'stop';
  if (kind === SignalKind.SIGNAL_KIND_KILL) return 'kill';
  throw new ValidationError('kind must be SIGNAL_KIND_STOP or SIGNAL_KIND_KILL', ['kind is required']);
}

export function toSignalOutcome(outcome: 'delivered' | 'already_exited'): SignalOutcome {
  return outcome === 'delivered' ? SignalOutcome.SIGNAL_OUTCOME_DELIVERED : SignalOutcome.SIGNAL_OUTCOME_ALREADY_EXITED;
}
