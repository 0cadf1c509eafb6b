import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Exit receipts and budgets (issue 10).
 * - `tasks.receipt`: how a terminal task ended (TaskFinished's receipt), served by the API and the CLI.
 * - The budget checks sum unfinished tasks, runtime and output per conversation and per tenant:
 *   an index on the tenant's tasks keeps the tenant sums off a full scan.
 */
export class TaskReceiptsBudgets1764450000600 implements MigrationInterface {
  name = 'TaskReceiptsBudgets1764450000600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE tasks ADD COLUMN receipt jsonb`);
    await q.query(`CREATE INDEX tasks_tenant_created ON tasks (tenant, created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS tasks_tenant_created`);
    await q.query(`ALTER TABLE tasks DROP COLUMN IF EXISTS receipt`);
  }
}
