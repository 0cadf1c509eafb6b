import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createHash } from 'node:crypto';
import { MIGRATIONS, migrate } from '@handplane/platform';

/** Server URL without database (tests reach the machine's real Postgres). */
export const PG_SERVER = process.env.TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
/**
 * The template's name carries a digest of the migration list: a new migration makes a new template,
 * and a template in use by a concurrent test run is never dropped under it.
 */
export const TEMPLATE_DB = `hp_tpl_${createHash('sha256').update(MIGRATIONS.map((m) => m.name).join(',')).digest('hex').slice(0, 12)}`;

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: `${PG_SERVER}/postgres` });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * Makes sure the migrated template database exists (jest global setup). Built under a temporary
 * name and renamed when complete, under an advisory lock, so concurrent runs never see half of it.
 */
export async function prepareTemplateDatabase(): Promise<void> {
  await admin(async (c) => {
    await c.query('SELECT pg_advisory_lock(770001)');
    try {
      const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [TEMPLATE_DB]);
      if (exists.rowCount) return;
      const building = `${TEMPLATE_DB}_build`;
      await c.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await migrate(`${PG_SERVER}/${building}`);
      await c.query(`ALTER DATABASE ${building} RENAME TO ${TEMPLATE_DB}`);
    } finally {
      await c.query('SELECT pg_advisory_unlock(770001)');
    }
  });
}

/** A fresh database for one test file, cloned from the template; `drop` removes it. */
export async function freshDatabase(label = 't'): Promise<{ url: string; name: string; drop: () => Promise<void> }> {
  const name = `hp_${label.replace(/[^a-z0-9]/gi, '').toLowerCase().slice(0, 20)}_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}`));
  return {
    url: `${PG_SERVER}/${name}`,
    name,
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}
