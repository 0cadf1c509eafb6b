import type { Pool, QueryResultRow } from 'pg';
import { Unavailable } from '@handplane/kernel';

// SQLSTATE classes that mean "the database cannot answer now", not "the query is wrong".
const TRANSIENT = /^(08|53|57P0|58)/;

// pg's own connection failures carry no code, only these messages.
const CONNECTION = /Connection terminated|timeout exceeded when trying to connect|connection error|Cannot use a pool after calling end/i;

function isTransient(e: unknown): boolean {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return true; // socket errors: ECONNREFUSED, …
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return TRANSIENT.test(code);
  return e instanceof Error && CONNECTION.test(e.message);
}

/** Runs one query; a database that cannot answer becomes `Unavailable` (503), a bad query stays a bug (500). */
export async function query<R extends QueryResultRow>(pool: Pool, text: string, params: unknown[] = []): Promise<R[]> {
  try {
    return (await pool.query<R>(text, params)).rows;
  } catch (e) {
    if (isTransient(e)) throw new Unavailable('the database is unavailable', { cause: e });
    throw e;
  }
}

/** Same as `query`, for any database call. */
export async function guardDb<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isTransient(e)) throw new Unavailable('the database is unavailable', { cause: e });
    throw e;
  }
}
