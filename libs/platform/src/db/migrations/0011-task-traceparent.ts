import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `tasks.traceparent`: the W3C trace context the task was registered under (the `traceparent`
 * header of its TaskRegistered in TASKS). The coordinator's sweeps (foreground cutover, deadlines,
 * budgets) act on a task inside that trace, so a command's trace shows them too.
 */
export class TaskTraceparent1764450001100 implements MigrationInterface {
  name = 'TaskTraceparent1764450001100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN traceparent text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS traceparent`);
  }
}
