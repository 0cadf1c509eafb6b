import type { Topology } from '@handplane/contracts';
import type { Projection } from '@handplane/platform';
import { commandLogIndexProjection, commandsProjection } from './command-read-models.projection';
import { queuesProjection, runsProjection, taskPromptsProjection, todosProjection } from './conversation-read-models.projection';

/** The read models the gateway hosts besides `conversations` (runs, todos, queues, task prompts, commands, command log index). */
export function gatewayReadModels(t: Topology): Projection[] {
  return [runsProjection(t), todosProjection(t), queuesProjection(t), taskPromptsProjection(t), commandsProjection(t), commandLogIndexProjection(t)];
}
