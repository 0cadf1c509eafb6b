import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The `tasks` read model keeps the foreground window and the deadline the task was registered
 * with, so `foreground_until` and `deadline_at` can be derived when TaskStarted arrives (both are
 * measured from the start) and the coordinator's sweeps survive restarts.
 */
export class TaskCoordinatorWindows1764450000210 implements MigrationInterface {
  name = 'TaskCoordinatorWindows1764450000210';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN foreground_window_ms bigint NOT NULL DEFAULT 0, ADD COLUMN timeout_ms bigint NOT NULL DEFAULT 0`);
    // The cutover sweep looks for running foreground tasks whose window passed.
    await q.query(`CREATE INDEX tasks_foreground_due ON tasks (foreground_until) WHERE status = 'running' AND NOT background`);
    // The outbox sweep looks for completions not yet published.
    await q.query(`CREATE INDEX task_notifications_unpublished ON task_notifications (created_at) WHERE published_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS task_notifications_unpublished`);
    await q.query(`DROP INDEX IF EXISTS tasks_foreground_due`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS timeout_ms, DROP COLUMN IF EXISTS foreground_window_ms`);
  }
}
