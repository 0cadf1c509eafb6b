import type { Message } from '@handplane/kernel';
import type { StopReason, TaskRegistered, TaskStopSignalled } from './task.events';

/**
 * Commands of the task aggregate. Time (`metadata.at`) and ids arrive in the command: the decider
 * reads no clock and draws no randomness.
 */

/**
 * The retry policy a command carries when its outcome may lead to another attempt. `maxAttempts`
 * counts every attempt (1 = no retry); `nextCommandId` is the id the next attempt would run as
 * (derived by the caller from the task id and the attempt number).
 */
export interface RetryPolicy {
  readonly maxAttempts: number;
  readonly nextCommandId: string;
}

/** Registers a task; the ids were derived by the caller (retries of one request derive the same ones). */
export type RegisterTask = Message<'RegisterTask', Omit<TaskRegistered['data'], 'registeredAt'>>;

/** Records that the runner accepted attempt `attempt` of the command (Exec answered). */
export type StartTask = Message<'StartTask', { runnerId: string; attempt: number }>;

/**
 * The command could not be started. `retry` is given only when the failure is transient (no runner
 * was available in time); a runner that refused the command for good fails the task.
 */
export type FailStart = Message<'FailStart', { reason: string; attempt: number; retry?: RetryPolicy }>;

/** The foreground window passed while the command was still running. */
export type BackgroundTask = Message<'BackgroundTask', Record<string, never>>;

/** Asks for the task to be stopped. `attempt`, when given, fences the request to that attempt. */
export type RequestStop = Message<'RequestStop', { reason: StopReason; attempt?: number; requestedBy: string; detail?: string }>;

/** The runner answered the stop signal of `attempt` (see TaskStopSignalled). */
export type RecordStopSignal = Message<'RecordStopSignal', { attempt: number; runnerId: string; outcome: TaskStopSignalled['data']['outcome'] }>;

/**
 * A stop was requested before any runner accepted the command, and no runner holds it: the task ends
 * without having run.
 */
export type AbandonStart = Message<'AbandonStart', { reason: string }>;

/**
 * The command's result settled (readable or unavailable): the task reaches its terminal status, or,
 * when the attempt was lost and `retry` allows it, its next attempt. `exitReason` is the runner's
 * reason for ending the command ('stopped', 'killed', 'timeout', 'lost: …'; '' or absent otherwise).
 */
export type FinishTask = Message<
  'FinishTask',
  {
    attempt: number;
    exitCode: number | null;
    signal: string | null;
    resultState: 'readable' | 'unavailable';
    outputBytes: number;
    exitReason?: string;
    retry?: RetryPolicy;
  }
>;

/** Everything one can ask of a task. A command naming an attempt is refused (Conflict) for any other attempt. */
export type TaskCommand = RegisterTask | StartTask | FailStart | BackgroundTask | RequestStop | RecordStopSignal | AbandonStart | FinishTask;
