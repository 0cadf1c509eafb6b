import type { Pool } from 'pg';
import { decodeConversationEvent, type Topology } from '@handplane/contracts';
import { runDurableConsumer, type JsMsg, type Logger, type Nats, type RunningConsumer } from '@handplane/platform';
import type { EpochEnded } from '@handplane/domain';
import type { ConversationRunner } from './conversation-runner';
import { queueAnswer, queueApproval, queueConditionWakeup, queueMessage, queueWakeup } from './queue';

/** Durable consumer name (namespaced by the topology). */
export const CONV_CONSUMER = 'runtime-conv';

const WANTED = new Set(['message.user', 'task.internal_event', 'task.condition_met', 'epoch.ended', 'question.answered', 'approval.resolved']);

function peekType(data: Uint8Array): string | undefined {
  try {
    return (JSON.parse(Buffer.from(data).toString('utf8')) as { type?: string }).type;
  } catch {
    return undefined; // not ours to judge; the decoders of the readers that need it complain
  }
}

/**
 * Turns CONV into durable work: a user message, an answer to a question or a person's approval
 * decision becomes an `inbox` row, a task completion a `wakeups` row (unique per conversation, task and attempt: each completion wakes the agent once,
 * beyond the JetStream duplicate window); then the conversation is kicked.
 */
export function startConvConsumer(deps: {
  nats: Nats;
  topology: Topology;
  pool: Pool;
  runner: ConversationRunner;
  logger: Logger;
  /** Stop-all's reaction (see epoch-ended.ts). */
  onEpochEnded?: (conversationId: string, ended: EpochEnded['data']) => Promise<void>;
}): Promise<RunningConsumer> {
  const { topology: t, pool, runner } = deps;
  const handler = async (m: JsMsg) => {
    if (!WANTED.has(peekType(m.data) ?? '')) return;
    const event = decodeConversationEvent(m.data);
    const conversationId = m.subject.slice(m.subject.lastIndexOf('.') + 1);
    if (event.type === 'message.user') await queueMessage(pool, conversationId, m.seq, event.data);
    else if (event.type === 'task.internal_event') await queueWakeup(pool, conversationId, event.data);
    else if (event.type === 'task.condition_met') await queueConditionWakeup(pool, conversationId, event.data);
    else if (event.type === 'epoch.ended') await deps.onEpochEnded?.(conversationId, event.data);
    else if (event.type === 'question.answered') await queueAnswer(pool, conversationId, m.seq, event.data);
    // Automated approvals are the runtime's own decisions; only a person's starts a turn (G7).
    else if (event.type === 'approval.resolved' && !event.data.automated) await queueApproval(pool, conversationId, m.seq, event.data);
    runner.kick(conversationId);
  };
  return runDurableConsumer(deps.nats, { stream: t.streams.CONV, durable: t.durable(CONV_CONSUMER), filterSubject: t.all.conv, handler, logger: deps.logger });
}
