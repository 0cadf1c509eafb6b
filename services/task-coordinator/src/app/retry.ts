import type { RetryPolicy } from '@handplane/domain';
import type { CoordinatorSettings } from './deps';
import { commandIdFor } from './ids';

/**
 * The retry policy for the current attempt of a task, as the decider takes it (undefined when retries
 * are off). The next attempt's command id derives from the task id and its number, so every
 * coordinator that decides the retry names the same command.
 */
export function retryPolicy(s: Pick<CoordinatorSettings, 'retryMaxAttempts'>, taskId: string, attempt: number): RetryPolicy | undefined {
  if (s.retryMaxAttempts <= 1) return undefined;
  return { maxAttempts: s.retryMaxAttempts, nextCommandId: commandIdFor(taskId, attempt + 1) };
}
