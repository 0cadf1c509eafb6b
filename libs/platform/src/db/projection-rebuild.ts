import { DeliverPolicy, type JsMsg } from '@nats-io/jetstream';
import type { Pool, PoolClient } from 'pg';
import { Conflict, ValidationError } from '@handplane/kernel';
import type { Logger } from '../logger';
import type { Nats } from '../nats/connect';
import { projectedMessage, type Projection } from './projector';

/** What a finished rebuild reports (the bench reads `rowsPerSecond`). */
export interface RebuildReport {
  readonly name: string;
  /** Stream messages read into the shadow tables (this run only, when it resumed). */
  readonly events: number;
  /** Rows of the rebuilt read model, all its tables together. */
  readonly rows: number;
  /** The projector position the rebuilt model was swapped in at. */
  readonly position: number;
  /** The position a killed earlier run had reached (0: started from sequence 1). */
  readonly resumedFrom: number;
  readonly seconds: number;
  readonly rowsPerSecond: number;
}

/** Progress after each committed batch of the shadow build. */
export interface RebuildProgress {
  readonly name: string;
  readonly seq: number;
  readonly events: number;
}

export interface RebuildOptions {
  readonly logger: Logger;
  /** Messages per shadow transaction (default 500). */
  readonly batchSize?: number;
  /** Called after each committed shadow batch; throwing here stops the rebuild as a crash would. */
  readonly onBatch?: (p: RebuildProgress) => void | Promise<void>;
  /** How long the swap waits for table locks held by readers (default 30 s). */
  readonly lockTimeoutMs?: number;
  /** Called once this rebuild holds the projection's rebuild lock and `projection_rebuilds` says `running`. */
  readonly onLocked?: () => void;
  /** Stops the rebuild between batches (it resumes on the next run). */
  readonly signal?: AbortSignal;
}

const SAFE = /^[a-z_][a-z0-9_]*$/;
const ident = (name: string): string => {
  if (!SAFE.test(name)) throw new ValidationError(`unsupported identifier ${JSON.stringify(name)}`);
  return name;
};
const schemaFor = (kind: 'shadow' | 'retired', name: string) => ident(`hp_${kind}_${name.toLowerCase().replace(/[^a-z0-9]+/g, '_')}`.slice(0, 63));

function lockKey(name: string): string {
  let h = 0;
  for (const ch of `projection-rebuild:${name}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return String(h);
}

/** True when `subject` matches a NATS filter (`*` one token, `>` the rest). */
export function subjectMatches(filter: string | undefined, subject: string): boolean {
  if (!filter) return true;
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length || (f[i] !== '*' && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

function tablesOf(p: Projection): string[] {
  if (!p.tables?.length) throw new ValidationError(`projection ${p.name} declares no tables and cannot be rebuilt`);
  return p.tables.map(ident);
}

/** The stream's last sequence (0 when empty). */
async function lastSeq(nats: Nats, stream: string): Promise<number> {
  return (await nats.jsm.streams.info(stream)).state.last_seq;
}

/**
 * Reads `stream` from `fromSeq` to `upto` in order (the whole stream: a filter would hide where the
 * range ends; the caller filters), handing over batches of at most `size` messages.
 */
async function readRange(nats: Nats, stream: string, fromSeq: number, upto: number, size: number, onBatch: (batch: JsMsg[]) => Promise<void>): Promise<void> {
  if (fromSeq > upto) return;
  const consumer = await nats.js.consumers.get(stream, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq });
  const iter = await consumer.consume({ max_messages: Math.max(size, 100) });
  let batch: JsMsg[] = [];
  try {
    for await (const m of iter) {
      if (m.seq > upto) break;
      batch.push(m);
      const end = m.seq >= upto || m.info.pending === 0;
      if (end || batch.length >= size) {
        await onBatch(batch);
        batch = [];
      }
      if (end) break;
    }
    if (batch.length) await onBatch(batch);
  } finally {
    await iter.close().catch(() => undefined);
  }
}

/** A message whose apply failed after it had written: the batch is redone message by message. */
class NeedsSavepoints extends Error {}

/**
 * Applies messages to the shadow tables exactly as the live projector does: a message that fails is
 * skipped, its writes undone. Fast mode saves the three round trips of a savepoint per message: a
 * message that throws before writing anything is skipped as is; one that throws after writing aborts
 * the batch (NeedsSavepoints), which the caller redoes in safe mode, one savepoint per message.
 */
async function applyInShadow(c: PoolClient, p: Projection, shadow: string, batch: JsMsg[], logger: Logger, safe: boolean): Promise<number> {
  await c.query(`SET LOCAL search_path TO ${shadow}, public`);
  let writes = 0;
  const counted = Object.create(c) as PoolClient;
  counted.query = ((...args: Parameters<PoolClient['query']>) => {
    writes++;
    return (c.query as (...a: unknown[]) => unknown)(...args);
  }) as PoolClient['query'];
  let last = 0;
  for (const m of batch) {
    last = m.seq;
    if (!subjectMatches(p.filterSubject, m.subject)) continue;
    if (safe) await c.query('SAVEPOINT one');
    const before = writes;
    try {
      await p.apply(counted, projectedMessage(m));
      if (safe) await c.query('RELEASE SAVEPOINT one');
    } catch (e) {
      if (!safe && writes > before) throw new NeedsSavepoints(`message ${m.seq} failed after writing`, { cause: e });
      if (safe) await c.query('ROLLBACK TO SAVEPOINT one');
      logger.error({ err: e, projection: p.name, seq: m.seq, subject: m.subject }, 'projection rebuild skipped a message');
    }
  }
  await c.query('SET LOCAL search_path TO public');
  return last;
}

/** Copies the live tables' definitions (columns, defaults, constraints, indexes, same names) into `shadow`. */
async function createShadow(c: PoolClient, shadow: string, tables: string[]): Promise<void> {
  await c.query(`DROP SCHEMA IF EXISTS ${shadow} CASCADE`);
  await c.query(`CREATE SCHEMA ${shadow}`);
  for (const t of tables) {
    await c.query(`CREATE TABLE ${shadow}.${t} (LIKE public.${t} INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMMENTS)`);
  }
  const fks: string[] = [];
  for (const t of tables) {
    const cons = await c.query<{ conname: string; contype: string; def: string }>(
      `SELECT conname, contype, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('p', 'u', 'c', 'x', 'f') ORDER BY conname`,
      [`public.${t}`],
    );
    for (const k of cons.rows) {
      const add = `ALTER TABLE ${shadow}.${t} ADD CONSTRAINT "${k.conname}" ${k.def}`;
      if (k.contype === 'f') fks.push(add);
      else await c.query(add);
    }
    const idx = await c.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes i WHERE schemaname = 'public' AND tablename = $1
          AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = $2::regclass AND k.conname = i.indexname)`,
      [t, `public.${t}`],
    );
    for (const r of idx.rows) await c.query(r.indexdef.replace(` ON public.${t} `, ` ON ${shadow}.${t} `));
  }
  // Foreign keys name their target unqualified: with the shadow first on the path they point inside it.
  await c.query(`SET LOCAL search_path TO ${shadow}, public`);
  for (const fk of fks) await c.query(fk);
  await c.query('SET LOCAL search_path TO public');
}

async function inTx<T>(pool: Pool, fn: (c: PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  try {
    await c.query('BEGIN');
    const out = await fn(c);
    await c.query('COMMIT');
    return out;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw e;
  } finally {
    c.release();
  }
}

/** True when the shadow tables still have the live tables' columns (no migration ran in between). */
async function sameColumns(pool: Pool, shadow: string, tables: string[]): Promise<boolean> {
  const r = await pool.query<{ schema: string; cols: string }>(
    `SELECT table_schema AS schema, string_agg(table_name || '.' || column_name || ':' || data_type || ':' || is_nullable, ',' ORDER BY table_name, column_name) AS cols
       FROM information_schema.columns WHERE table_schema IN ('public', $1) AND table_name = ANY($2) GROUP BY table_schema`,
    [shadow, tables],
  );
  const by = new Map(r.rows.map((x) => [x.schema, x.cols]));
  return by.get('public') !== undefined && by.get('public') === by.get(shadow);
}

/**
 * Where to start: a shadow left by a killed run resumes from its committed position (its rows and
 * that position were written in the same transactions); anything else starts over from sequence 1.
 */
async function prepare(pool: Pool, name: string, shadow: string, tables: string[]): Promise<number> {
  const prior = await pool.query<{ seq: string; status: string }>('SELECT seq, status FROM projection_rebuilds WHERE name = $1', [name]);
  const existing = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM pg_tables WHERE schemaname = $1 AND tablename = ANY($2)`, [shadow, tables]);
  if (prior.rowCount && prior.rows[0]!.status !== 'done' && Number(existing.rows[0]!.n) === tables.length && (await sameColumns(pool, shadow, tables))) {
    await pool.query(`UPDATE projection_rebuilds SET status = 'running', error = NULL, updated_at = now() WHERE name = $1`, [name]);
    return Number(prior.rows[0]!.seq);
  }
  await inTx(pool, async (c) => {
    await createShadow(c, shadow, tables);
    await c.query(
      `INSERT INTO projection_rebuilds (name, status, seq, events, rows, started_at, updated_at) VALUES ($1, 'running', 0, 0, 0, now(), now())
       ON CONFLICT (name) DO UPDATE SET status = 'running', seq = 0, events = 0, rows = 0, started_at = now(), updated_at = now(), finished_at = NULL, seconds = NULL, error = NULL`,
      [name],
    );
  });
  return 0;
}

/**
 * Rebuilds projection `p` from sequence 1 while the system keeps serving (DESIGN.md §2):
 * 1. one rebuild per projection (a Postgres advisory lock; a second one is refused with Conflict);
 * 2. the read model is built into a shadow schema with an ordered consumer, its progress committed
 *    with its rows (a killed rebuild resumes);
 * 3. the swap locks the live projector's position row (the live projector waits), applies what the
 *    live model has beyond the shadow, moves the live tables out and the shadow tables in, stores the
 *    position and commits: readers see the old model or the new one, never half of one, and the live
 *    projector continues from the position the new tables are at.
 */
export async function rebuildProjection(nats: Nats, pool: Pool, p: Projection, o: RebuildOptions): Promise<RebuildReport> {
  const tables = tablesOf(p);
  const shadow = schemaFor('shadow', p.name);
  const retired = schemaFor('retired', p.name);
  const size = o.batchSize ?? 500;
  const lockClient = await pool.connect();
  const started = performance.now();
  try {
    const got = await lockClient.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [lockKey(p.name)]);
    if (!got.rows[0]!.ok) throw new Conflict(`a rebuild of ${p.name} is already running`);
    try {
      const resumedFrom = await prepare(pool, p.name, shadow, tables);
      o.onLocked?.();
      let pos = resumedFrom;
      let events = 0;
      const commitBatch = async (c: PoolClient, batch: JsMsg[], safe: boolean) => {
        if (o.signal?.aborted) throw new Error(`rebuild of ${p.name} stopped`);
        const last = await applyInShadow(c, p, shadow, batch, o.logger, safe);
        await c.query(`UPDATE projection_rebuilds SET seq = $2, events = events + $3, updated_at = now() WHERE name = $1`, [p.name, last, batch.length]);
        pos = last;
        events += batch.length;
      };
      const commitOwnTx = async (batch: JsMsg[]) => {
        try {
          await inTx(pool, (c) => commitBatch(c, batch, false));
        } catch (e) {
          if (!(e instanceof NeedsSavepoints)) throw e;
          await inTx(pool, (c) => commitBatch(c, batch, true));
        }
      };
      try {
        // Bulk: up to the stream's end, outside any lock the live side waits for; again while events
        // keep arriving, so the swap (which holds the live projector) has little left to apply.
        for (let round = 0; round < 5; round++) {
          const end = await lastSeq(nats, p.stream);
          if (round > 0 && end - pos <= size) break;
          await readRange(nats, p.stream, pos + 1, end, size, async (batch) => {
            await commitOwnTx(batch);
            await o.onBatch?.({ name: p.name, seq: pos, events });
          });
        }
        const { rows, position } = await inTx(pool, async (c) => {
          await c.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(o.lockTimeoutMs ?? 30_000))}`);
          await c.query(`INSERT INTO projector_positions (name, seq) VALUES ($1, 0) ON CONFLICT (name) DO NOTHING`, [p.name]);
          const live = Number((await c.query<{ seq: string }>('SELECT seq FROM projector_positions WHERE name = $1 FOR UPDATE', [p.name])).rows[0]!.seq);
          // The live model moved on while the shadow was built: catch up to exactly where it is.
          await readRange(nats, p.stream, pos + 1, live, size, (batch) => commitBatch(c, batch, true));
          const position = Math.max(live, pos);
          let rows = 0;
          for (const t of tables) rows += Number((await c.query<{ n: string }>(`SELECT count(*) AS n FROM ${shadow}.${t}`)).rows[0]!.n);
          await c.query(`DROP SCHEMA IF EXISTS ${retired} CASCADE`);
          await c.query(`CREATE SCHEMA ${retired}`);
          for (const t of tables) await c.query(`ALTER TABLE public.${t} SET SCHEMA ${retired}`);
          for (const t of tables) await c.query(`ALTER TABLE ${shadow}.${t} SET SCHEMA public`);
          await c.query(`DROP SCHEMA ${retired} CASCADE`);
          await c.query(`DROP SCHEMA ${shadow} CASCADE`);
          await c.query('UPDATE projector_positions SET seq = $2, updated_at = now() WHERE name = $1', [p.name, position]);
          const seconds = (performance.now() - started) / 1000;
          await c.query(`UPDATE projection_rebuilds SET status = 'done', seq = $2, rows = $3, finished_at = now(), updated_at = now(), seconds = $4 WHERE name = $1`, [
            p.name,
            position,
            rows,
            seconds,
          ]);
          return { rows, position };
        });
        const seconds = (performance.now() - started) / 1000;
        const report: RebuildReport = { name: p.name, events, rows, position, resumedFrom, seconds, rowsPerSecond: projectionRebuildRate({ rows, seconds }) };
        o.logger.info(report, 'projection rebuilt');
        return report;
      } catch (e) {
        await pool
          .query(`UPDATE projection_rebuilds SET status = 'failed', error = $2, updated_at = now() WHERE name = $1`, [p.name, String((e as Error)?.message ?? e).slice(0, 500)])
          .catch(() => undefined);
        throw e;
      }
    } finally {
      await lockClient.query('SELECT pg_advisory_unlock($1::bigint)', [lockKey(p.name)]).catch(() => undefined);
    }
  } finally {
    lockClient.release();
  }
}

/** Rows per second of a rebuild (what `bench/` reports as the projection rebuild rate). */
export function projectionRebuildRate(r: { rows: number; seconds: number }): number {
  return r.seconds > 0 ? r.rows / r.seconds : 0;
}

/** A projection as `handplane projections ls` shows it. */
export interface ProjectionStatus {
  readonly name: string;
  readonly stream: string;
  readonly position: number;
  readonly rows: number;
  readonly rebuild: { status: string; seq: number; rows: number; startedAt: string; finishedAt: string | null; seconds: number | null; error: string | null } | null;
}

/** Position, row count and last rebuild of each projection. */
export async function projectionStatus(pool: Pool, projections: readonly Pick<Projection, 'name' | 'stream' | 'tables'>[]): Promise<ProjectionStatus[]> {
  const out: ProjectionStatus[] = [];
  for (const p of projections) {
    const pos = await pool.query<{ seq: string }>('SELECT seq FROM projector_positions WHERE name = $1', [p.name]);
    let rows = 0;
    for (const t of p.tables ?? []) rows += Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM public.${ident(t)}`)).rows[0]!.n);
    const r = await pool.query<{ status: string; seq: string; rows: string; started_at: Date; finished_at: Date | null; seconds: number | null; error: string | null }>(
      'SELECT status, seq, rows, started_at, finished_at, seconds, error FROM projection_rebuilds WHERE name = $1',
      [p.name],
    );
    const b = r.rows[0];
    out.push({
      name: p.name,
      stream: p.stream,
      position: pos.rowCount ? Number(pos.rows[0]!.seq) : 0,
      rows,
      rebuild: b
        ? { status: b.status, seq: Number(b.seq), rows: Number(b.rows), startedAt: b.started_at.toISOString(), finishedAt: b.finished_at?.toISOString() ?? null, seconds: b.seconds, error: b.error }
        : null,
    });
  }
  return out;
}
