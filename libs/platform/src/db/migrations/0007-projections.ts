import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 8 part 1: every read model is a projection with its position in `projector_positions`.
 * - `projection_rebuilds`: progress of `handplane projections rebuild <name>`, written in the same
 *   transaction as the shadow rows, so a rebuild killed mid-way resumes from where it stopped.
 * - New read models built from the streams: `runs`, `todos`, `conversation_queue` (CONV),
 *   `commands` (TASKS `cmd.*`) and `command_log_index` (LOGS).
 * No serial columns: a rebuild copies these definitions into a shadow schema and swaps them in.
 */
export class Projections1764450000700 implements MigrationInterface {
  name = 'Projections1764450000700';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE projection_rebuilds (
      name text PRIMARY KEY,
      status text NOT NULL CHECK (status IN ('running', 'done', 'failed')),
      seq bigint NOT NULL DEFAULT 0,
      events bigint NOT NULL DEFAULT 0,
      rows bigint NOT NULL DEFAULT 0,
      started_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      seconds double precision,
      error text
    )`);
    await q.query(`CREATE TABLE runs (
      run_id text PRIMARY KEY,
      conversation_id text NOT NULL,
      user_id text NOT NULL,
      trigger text NOT NULL,
      trigger_ref text,
      status text NOT NULL,
      detail text,
      started_seq bigint NOT NULL,
      started_at timestamptz NOT NULL,
      finished_at timestamptz,
      last_seq bigint NOT NULL
    )`);
    await q.query(`CREATE INDEX runs_conversation ON runs (conversation_id, started_seq)`);
    await q.query(`CREATE TABLE todos (
      conversation_id text NOT NULL,
      todo_id text NOT NULL,
      position integer NOT NULL,
      content text NOT NULL,
      status text NOT NULL,
      task_ids jsonb NOT NULL DEFAULT '[]',
      waited_on boolean NOT NULL DEFAULT false,
      run_id text,
      updated_seq bigint NOT NULL,
      PRIMARY KEY (conversation_id, todo_id)
    )`);
    await q.query(`CREATE TABLE conversation_queue (
      conversation_id text NOT NULL,
      seq bigint NOT NULL,
      kind text NOT NULL,
      item_id text NOT NULL,
      user_id text NOT NULL,
      queued_at timestamptz NOT NULL,
      started_run_id text,
      started_seq bigint,
      PRIMARY KEY (conversation_id, seq)
    )`);
    await q.query(`CREATE INDEX conversation_queue_item ON conversation_queue (conversation_id, kind, item_id)`);
    await q.query(`CREATE TABLE commands (
      command_id text PRIMARY KEY,
      task_id text NOT NULL,
      attempt integer NOT NULL,
      runner_id text,
      exit_code integer,
      signal text,
      end_offset bigint,
      reason text,
      started_at timestamptz,
      finished_at timestamptz,
      result_state text NOT NULL DEFAULT 'result_pending',
      output_bytes bigint NOT NULL DEFAULT 0,
      truncation jsonb,
      delivered_to text,
      last_seq bigint NOT NULL
    )`);
    await q.query(`CREATE INDEX commands_task ON commands (task_id, attempt)`);
    await q.query(`CREATE TABLE command_log_index (
      command_id text NOT NULL,
      kind text NOT NULL CHECK (kind IN ('stdout', 'stderr', 'exit', 'truncated')),
      "offset" bigint NOT NULL,
      bytes integer NOT NULL,
      logs_seq bigint NOT NULL,
      PRIMARY KEY (command_id, kind, "offset")
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['command_log_index', 'commands', 'conversation_queue', 'todos', 'runs', 'projection_rebuilds']) await q.query(`DROP TABLE IF EXISTS ${t}`);
  }
}
