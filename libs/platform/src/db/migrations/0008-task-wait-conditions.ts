import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Condition waits (issue 10.1): the coordinator's watch list. One row per (run, task) wait with a
 * condition; the watcher scans the task's durable output from `scan_offset` and resolves the row
 * once (`status` leaves 'pending' in the same transaction that decides it); `published_at` is the
 * outbox mark of the one wake-up it publishes to the conversation.
 */
export class TaskWaitConditions1764450000800 implements MigrationInterface {
  name = 'TaskWaitConditions1764450000800';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE task_wait_conditions (
      condition_id text PRIMARY KEY,
      conversation_id text NOT NULL,
      task_id text NOT NULL,
      run_id text NOT NULL,
      user_id text NOT NULL,
      until jsonb NOT NULL,
      timeout_at timestamptz NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'met', 'timed_out', 'task_finished')),
      scan_command_id text,
      scan_offset bigint NOT NULL DEFAULT 0,
      scan_line_offset bigint NOT NULL DEFAULT 0,
      scan_carry bytea NOT NULL DEFAULT ''::bytea,
      outcome jsonb,
      created_at timestamptz NOT NULL DEFAULT now(),
      resolved_at timestamptz,
      published_at timestamptz
    )`);
    await q.query(`CREATE INDEX task_wait_conditions_pending ON task_wait_conditions (created_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX task_wait_conditions_unpublished ON task_wait_conditions (resolved_at) WHERE status IN ('met', 'timed_out') AND published_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS task_wait_conditions`);
  }
}
