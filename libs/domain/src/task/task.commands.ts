import type { Message } from '@handplane/kernel';
import type { StopReason, TaskRegistered } from './task.events';

/**
 * Commands of the task aggregate. Time (`metadata.at`) and ids arrive in the command: the decider
 * reads no clock and draws no randomness.
 */

/** Registers a task; the ids were derived by the caller (retries of one request derive the same ones). */
export type RegisterTask = Message<'RegisterTask', Omit<TaskRegistered['data'], 'registeredAt'>>;

/** Records that the runner accepted the command (Exec answered). */
export type StartTask = Message<'StartTask', { runnerId: string }>;

/** The command could not be started (the runner refused it, or no runner was available in time). */
export type FailStart = Message<'FailStart', { reason: string }>;

/** The foreground window passed while the command was still running. */
export type BackgroundTask = Message<'BackgroundTask', Record<string, never>>;

/**
 * Asks for the task to be stopped. `attempt`, when given, fences the request to that attempt.
 * The coordinator's stop path (signals, escalation) belongs to issue 4; the rule lives here already.
 */
export type RequestStop = Message<'RequestStop', { reason: StopReason; attempt?: number; requestedBy: string }>;

/** The command's result settled (readable or unavailable): the task reaches its terminal status. */
export type FinishTask = Message<
  'FinishTask',
  { exitCode: number | null; signal: string | null; resultState: 'readable' | 'unavailable'; outputBytes: number }
>;

/** Everything one can ask of a task. */
export type TaskCommand = RegisterTask | StartTask | FailStart | BackgroundTask | RequestStop | FinishTask;
