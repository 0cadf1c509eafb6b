import type { PoolClient } from 'pg';
import { decodeConversationEvent, MalformedEvent, type Topology } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import type { Projection } from '@handplane/platform';
import { applyPromptEvent } from './prompts.projection';
import { CONVERSATIONS_PROJECTION } from './resources';

// Only these types change the read model; the rest of CONV is not validated here.
const RELEVANT = new Set<string>([
  'conversation.created',
  'member.added',
  'run.started',
  'run.finished',
  'todos.updated',
  'epoch.ended',
  'approval.requested',
  'approval.resolved',
  'question.asked',
  'question.answered',
]);

function relevant(data: Uint8Array): boolean {
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch (cause) {
    throw new MalformedEvent('conversation event: not JSON', { cause });
  }
  return RELEVANT.has(String((raw as { type?: unknown })?.type));
}

async function addMember(c: PoolClient, id: string, userId: string, at: string): Promise<void> {
  // The member's tenant is the conversation's: membership never crosses tenants.
  await c.query(
    `INSERT INTO conversation_members (conversation_id, user_id, tenant, added_at)
     SELECT id, $2, tenant, $3 FROM conversations WHERE id = $1
     ON CONFLICT (conversation_id, user_id) DO NOTHING`,
    [id, userId, at],
  );
}

/**
 * Applies one event to the row of conversation `id`. Inserts are `ON CONFLICT DO NOTHING` and
 * updates require `last_seq < seq`, so applying an old message again changes nothing.
 */
async function applyEvent(c: PoolClient, id: string, seq: number, e: ConversationEvent): Promise<void> {
  if (await applyPromptEvent(c, id, seq, e)) return;
  switch (e.type) {
    case 'conversation.created':
      await c.query(
        `INSERT INTO conversations (id, tenant, title, created_by, created_at, last_seq) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
        [id, e.data.tenant, e.data.title, e.data.createdBy, e.metadata.at, seq],
      );
      // The creator is a member by construction, even if its own member.added never made it.
      return addMember(c, id, e.data.createdBy, e.metadata.at);
    case 'member.added':
      return addMember(c, id, e.data.userId, e.metadata.at);
    case 'run.started':
      await c.query(`UPDATE conversations SET run_status = 'running', run_id = $2, run_user_id = $3, last_seq = $4 WHERE id = $1 AND last_seq < $4`, [
        id,
        e.data.runId,
        e.data.userId,
        seq,
      ]);
      return;
    case 'run.finished': {
      // A waiting run keeps its id and user (it resumes later); any other outcome leaves the conversation idle.
      const waiting = e.data.outcome === 'waiting';
      await c.query(
        `UPDATE conversations
            SET run_status = $3, run_id = CASE WHEN $4::boolean THEN run_id END, run_user_id = CASE WHEN $4::boolean THEN run_user_id END, last_seq = $5
          WHERE id = $1 AND last_seq < $5 AND (run_id IS NULL OR run_id = $2)`,
        [id, e.data.runId, waiting ? 'waiting' : 'idle', waiting, seq],
      );
      return;
    }
    case 'todos.updated':
      await c.query(`UPDATE conversations SET todos = $2::jsonb, wait_for_tasks = $3::jsonb, last_seq = $4 WHERE id = $1 AND last_seq < $4`, [
        id,
        JSON.stringify(e.data.todos),
        JSON.stringify(e.data.waitForTasks),
        seq,
      ]);
      return;
    case 'epoch.ended':
      // Epochs only grow; GREATEST keeps a replayed or late event from moving one back.
      await c.query(`UPDATE conversations SET epoch = GREATEST(epoch, $2) WHERE id = $1`, [id, e.data.nextEpoch]);
      return;
    default:
      return;
  }
}

/** The `conversations` read model (and its members), built from the whole CONV stream. */
export function conversationsProjection(t: Topology): Projection {
  return {
    name: CONVERSATIONS_PROJECTION,
    stream: t.streams.CONV,
    tables: ['conversations', 'conversation_members', 'conversation_prompts'],
    async apply(c, msg) {
      if (!relevant(msg.data)) return;
      const event = decodeConversationEvent(msg.data);
      // The subject names the aggregate: `[<prefix>.]conv.<conversationId>`.
      await applyEvent(c, msg.subject.slice(msg.subject.lastIndexOf('.') + 1), msg.seq, event);
    },
  };
}
