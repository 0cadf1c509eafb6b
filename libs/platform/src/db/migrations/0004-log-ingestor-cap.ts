import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The log ingestor's cursor learns two things.
 * - `logs_seq`: the LOGS stream sequence of the last chunk published by a committed batch. Chunks
 *   above it were published by a batch whose transaction never committed; the next claim adopts
 *   them as they are, so LOGS and `command_log` keep the same rows and no byte appears twice in LOGS.
 * - The output cap (OUTPUT_CAP_BYTES): `[dropped_from, dropped_to)` is the range of runner offsets
 *   deliberately not stored (the head below it and the tail above it keep their real offsets);
 *   `drop_final` is set once the exit record fixed the range and the tail is being stored.
 */
export class LogIngestorCap1764450000400 implements MigrationInterface {
  name = 'LogIngestorCap1764450000400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ingest_cursors
      ADD COLUMN logs_seq bigint,
      ADD COLUMN dropped_from bigint,
      ADD COLUMN dropped_to bigint,
      ADD COLUMN drop_final boolean NOT NULL DEFAULT false`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ingest_cursors DROP COLUMN IF EXISTS drop_final, DROP COLUMN IF EXISTS dropped_to, DROP COLUMN IF EXISTS dropped_from, DROP COLUMN IF EXISTS logs_seq`);
  }
}
