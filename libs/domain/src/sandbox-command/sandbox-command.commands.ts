import type { Message } from '@handplane/kernel';
import type { CommandExited, CommandResultDelivered, OutputTruncation } from './sandbox-command.events';

/**
 * Commands of the SandboxCommand aggregate (`cmd.<commandId>`). Time (`metadata.at`) arrives in the
 * command. The first command of a history carries the identity (`commandId`, `taskId`, `attempt`);
 * the later ones take it from the state.
 */

/** The runner's exit record was read and every byte up to it was handed to the Command Log. */
export type RecordExit = Message<'RecordExit', CommandExited['data']>;

/**
 * Every byte up to the exit record is durable: `outputBytes` must equal the recorded end offset. When
 * the output passed the cap, `truncation` names the one range that was dropped on purpose.
 */
export type MarkReadable = Message<'MarkReadable', { outputBytes: number; truncation?: OutputTruncation }>;

/**
 * The runner was lost with bytes missing; `durableBytes` is the committed prefix that stays readable.
 * It can come before any exit was recorded, so it carries the identity too.
 */
export type MarkUnavailable = Message<
  'MarkUnavailable',
  { commandId: string; taskId: string; attempt: number; durableBytes: number; reason: string; truncation?: OutputTruncation }
>;

/** The result was handed to the agent or a person. */
export type MarkDelivered = Message<'MarkDelivered', { deliveredTo: CommandResultDelivered['data']['deliveredTo'] }>;

/** Everything one can ask of a SandboxCommand. */
export type SandboxCommandCommand = RecordExit | MarkReadable | MarkUnavailable | MarkDelivered;
