import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '@handplane/platform';

/** Server URL without database (tests reach the machine's real Postgres). */
export const PG_SERVER = process.env.TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432';
export const TEMPLATE_DB = 'hp_test_template';

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

/** Rebuilds the migrated template database that every test file clones (jest global setup). */
export async function prepareTemplateDatabase(): Promise<void> {
  await admin(async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DB} WITH (FORCE)`);
  });
  await migrate(`${PG_SERVER}/${TEMPLATE_DB}`);
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
