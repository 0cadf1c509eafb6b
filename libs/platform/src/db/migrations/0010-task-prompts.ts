import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `task_prompts` (projection `task-prompts`, gateway, from CONV): the last prompt each task stopped
 * at (`task.awaiting_input`) and whether input came after it (`task.stdin`). The task registry joins
 * it to say which running tasks wait for input (`awaitingInput`, `?awaiting=true`).
 */
export class TaskPrompts1764450001000 implements MigrationInterface {
  name = 'TaskPrompts1764450001000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE task_prompts (
      task_id text PRIMARY KEY,
      command_id text NOT NULL,
      attempt integer NOT NULL,
      prompt text NOT NULL,
      "offset" bigint NOT NULL,
      asked_at timestamptz NOT NULL,
      asked_seq bigint NOT NULL,
      answered_seq bigint
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS task_prompts`);
  }
}
