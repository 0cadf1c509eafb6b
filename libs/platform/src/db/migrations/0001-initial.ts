import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Read models (projections), the Command Log, ingestion cursors, the notification outbox and
 * the runtime's checkpoints. Everything except the Command Log and cursors can be rebuilt from the streams.
 */
export class Initial1764450000001 implements MigrationInterface {
  name = 'Initial1764450000001';

  async up(q: QueryRunner): Promise<void> {
    // Position of each projector in its stream, updated in the same transaction as its rows.
    await q.query(`CREATE TABLE projector_positions (name text PRIMARY KEY, seq bigint NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT now())`);

    await q.query(`CREATE TABLE conversations (
      id text PRIMARY KEY,
      tenant text NOT NULL,
      title text NOT NULL DEFAULT '',
      created_by text NOT NULL,
      created_at timestamptz NOT NULL,
      epoch integer NOT NULL DEFAULT 1,
      run_status text NOT NULL DEFAULT 'idle',
      run_id text,
      run_user_id text,
      todos jsonb NOT NULL DEFAULT '[]',
      wait_for_tasks jsonb NOT NULL DEFAULT '[]',
      last_seq bigint NOT NULL DEFAULT 0
    )`);
    await q.query(`CREATE INDEX conversations_tenant ON conversations (tenant, created_at)`);
    await q.query(`CREATE TABLE conversation_members (
      conversation_id text NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      user_id text NOT NULL,
      tenant text NOT NULL,
      added_at timestamptz NOT NULL,
      PRIMARY KEY (conversation_id, user_id)
    )`);
    await q.query(`CREATE INDEX conversation_members_user ON conversation_members (tenant, user_id)`);

    await q.query(`CREATE TABLE tasks (
      task_id text PRIMARY KEY,
      command_id text NOT NULL UNIQUE,
      conversation_id text NOT NULL,
      tenant text NOT NULL,
      user_id text NOT NULL,
      origin text NOT NULL,
      run_id text,
      command text NOT NULL,
      cwd text NOT NULL DEFAULT '',
      status text NOT NULL,
      background boolean NOT NULL DEFAULT false,
      attempt integer NOT NULL,
      epoch integer NOT NULL,
      runner_id text,
      exit_code integer,
      signal text,
      result_state text NOT NULL DEFAULT 'result_pending',
      output_bytes bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz,
      deadline_at timestamptz,
      foreground_until timestamptz,
      last_seq bigint NOT NULL DEFAULT 0
    )`);
    await q.query(`CREATE INDEX tasks_conversation ON tasks (conversation_id, created_at)`);
    await q.query(`CREATE INDEX tasks_tenant_status ON tasks (tenant, status)`);

    // The Command Log: every output byte, exact, in chunks keyed by their first offset.
    await q.query(`CREATE TABLE command_log (
      command_id text NOT NULL,
      "offset" bigint NOT NULL,
      stream smallint NOT NULL,
      data bytea NOT NULL,
      PRIMARY KEY (command_id, "offset")
    )`);
    // The ingestor's committed cursor per command, its lease and the result state machine.
    await q.query(`CREATE TABLE ingest_cursors (
      command_id text PRIMARY KEY,
      task_id text NOT NULL,
      conversation_id text NOT NULL,
      attempt integer NOT NULL,
      runner_id text NOT NULL,
      committed_offset bigint NOT NULL DEFAULT 0,
      end_offset bigint,
      exit_code integer,
      signal text,
      result_state text NOT NULL DEFAULT 'result_pending',
      foreground_until timestamptz,
      owner text,
      lease_until timestamptz,
      last_error text,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE INDEX ingest_cursors_open ON ingest_cursors (result_state, lease_until)`);

    // Exactly-once completion: one row per (task, attempt); published_at set once the CONV event is acked.
    await q.query(`CREATE TABLE task_notifications (
      task_id text NOT NULL,
      attempt integer NOT NULL,
      conversation_id text NOT NULL,
      payload jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      published_at timestamptz,
      PRIMARY KEY (task_id, attempt)
    )`);

    // The runtime: run lease per conversation, checkpoint, durable queue of internal task events.
    await q.query(`CREATE TABLE run_leases (
      conversation_id text PRIMARY KEY,
      run_id text NOT NULL,
      owner text NOT NULL,
      lease_until timestamptz NOT NULL
    )`);
    await q.query(`CREATE TABLE run_checkpoints (
      conversation_id text PRIMARY KEY,
      run_id text,
      state jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`CREATE TABLE wakeups (
      conversation_id text NOT NULL,
      task_id text NOT NULL,
      attempt integer NOT NULL,
      user_id text NOT NULL,
      payload jsonb NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      consumed_by_run text,
      consumed_at timestamptz,
      PRIMARY KEY (conversation_id, task_id, attempt)
    )`);
    await q.query(`CREATE TABLE inbox (
      conversation_id text NOT NULL,
      seq bigint NOT NULL,
      kind text NOT NULL,
      user_id text NOT NULL,
      payload jsonb NOT NULL,
      consumed_by_run text,
      PRIMARY KEY (conversation_id, seq)
    )`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['inbox', 'wakeups', 'run_checkpoints', 'run_leases', 'task_notifications', 'ingest_cursors', 'command_log', 'tasks', 'conversation_members', 'conversations', 'projector_positions']) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
