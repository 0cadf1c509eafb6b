import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Stops, epochs and reconciliation for the task coordinator.
 * - `tasks` keeps the stop request and whether the runner acknowledged its signal, so the stop sweep
 *   derives the signals still owed from the read model (they survive a coordinator restart).
 * - `conversation_epochs` is the coordinator's read model of `epoch.ended` (CONV): the epoch each
 *   conversation is in, so start-task refuses a stale epoch and the sweep stops tasks of ended ones.
 */
export class TaskCoordinatorStops1764450000230 implements MigrationInterface {
  name = 'TaskCoordinatorStops1764450000230';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN stop_reason text, ADD COLUMN stop_requested_at timestamptz, ADD COLUMN stop_signalled_at timestamptz`);
    // Every sweep (deadline, stop, epoch, reconciliation) reads only unfinished tasks.
    await q.query(`CREATE INDEX tasks_unfinished ON tasks (conversation_id, epoch) WHERE status IN ('starting', 'running', 'stopping')`);
    await q.query(`CREATE TABLE conversation_epochs (
      conversation_id text PRIMARY KEY,
      epoch integer NOT NULL,
      ended_seq bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS conversation_epochs`);
    await q.query(`DROP INDEX IF EXISTS tasks_unfinished`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS stop_signalled_at, DROP COLUMN IF EXISTS stop_requested_at, DROP COLUMN IF EXISTS stop_reason`);
  }
}
