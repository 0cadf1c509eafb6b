import type { PoolClient } from 'pg';
import type { ConversationEvent } from '@handplane/domain';

async function request(c: PoolClient, id: string, kind: 'approval' | 'question', promptId: string, runId: string, seq: number, body: unknown, at: string): Promise<void> {
  await c.query(
    `INSERT INTO conversation_prompts (conversation_id, kind, prompt_id, run_id, request, requested_seq, requested_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7) ON CONFLICT (conversation_id, kind, prompt_id) DO NOTHING`,
    [id, kind, promptId, runId, JSON.stringify(body), seq, at],
  );
}

// Only the first resolution counts: a second one (another user, a retry past the duplicate window) changes nothing.
async function resolve(c: PoolClient, id: string, kind: 'approval' | 'question', promptId: string, by: string, body: unknown, at: string): Promise<void> {
  await c.query(
    `UPDATE conversation_prompts SET status = 'resolved', resolution = $4::jsonb, resolved_by = $5, resolved_at = $6
      WHERE conversation_id = $1 AND kind = $2 AND prompt_id = $3 AND status = 'pending'`,
    [id, kind, promptId, JSON.stringify(body), by, at],
  );
}

/**
 * The approvals and questions of a conversation (`conversation_prompts`); returns false for any
 * other event. Idempotent: inserts do nothing twice, a resolution applies only to a pending row.
 */
export async function applyPromptEvent(c: PoolClient, id: string, seq: number, e: ConversationEvent): Promise<boolean> {
  const at = e.metadata.at;
  switch (e.type) {
    case 'approval.requested':
      await request(c, id, 'approval', e.data.approvalId, e.data.runId, seq, { command: e.data.command, reason: e.data.reason }, at);
      return true;
    case 'approval.resolved':
      await resolve(c, id, 'approval', e.data.approvalId, e.data.by, { decision: e.data.decision, automated: e.data.automated }, at);
      return true;
    case 'question.asked':
      await request(c, id, 'question', e.data.questionId, e.data.runId, seq, { text: e.data.text }, at);
      return true;
    case 'question.answered':
      await resolve(c, id, 'question', e.data.questionId, e.data.by, { text: e.data.text }, at);
      return true;
    default:
      return false;
  }
}
