import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The gateway's read model of approvals and questions (CONV `approval.requested|resolved`,
 * `question.asked|answered`): the HTTP API answers 404 for an unknown one and 409 for one already
 * resolved, and the conversation view lists the pending ones. Rebuilt from CONV like `conversations`.
 */
export class GatewayPrompts1764450000500 implements MigrationInterface {
  name = 'GatewayPrompts1764450000500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE conversation_prompts (
      conversation_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('approval', 'question')),
      prompt_id text NOT NULL,
      run_id text,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'resolved')),
      request jsonb NOT NULL,
      resolution jsonb,
      requested_seq bigint NOT NULL,
      requested_at timestamptz NOT NULL,
      resolved_by text,
      resolved_at timestamptz,
      PRIMARY KEY (conversation_id, kind, prompt_id)
    )`);
    await q.query(`CREATE INDEX conversation_prompts_pending ON conversation_prompts (conversation_id, requested_seq) WHERE status = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS conversation_prompts`);
  }
}
