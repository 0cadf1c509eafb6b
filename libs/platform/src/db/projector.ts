import { DeliverPolicy, type ConsumerMessages, type JsMsg } from '@nats-io/jetstream';
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { Pool, PoolClient } from 'pg';
import type { Logger } from '../logger';
import type { Nats } from '../nats/connect';
import { LIVE_CONSUME } from '../nats/durable-consumer';
import { extractNatsHeaders } from '../telemetry/propagation';
import { inSpan, SpanKind } from '../telemetry/tracing';

/**
 * A read model built from one stream. `apply` runs inside the transaction that also stores the
 * projector's position, so a crash never applies an event twice or skips one.
 */
export interface Projection {
  readonly name: string;
  readonly stream: string;
  /** One subject filter, or the whole stream. */
  readonly filterSubject?: string;
  /**
   * The tables this projection alone writes (its read model). `handplane projections rebuild` builds
   * copies of them in a shadow schema and swaps them in; a projection without tables cannot be rebuilt.
   */
  readonly tables?: readonly string[];
  /** Columns not derived from the events (e.g. `updated_at = now()`), left out when comparing a rebuild. */
  readonly volatileColumns?: Readonly<Record<string, readonly string[]>>;
  /** Applies one message; throw MalformedEvent (or return) to skip a message that cannot be read. */
  apply(c: PoolClient, msg: ProjectedMessage): Promise<void>;
}

/** One stream message as a projection sees it. */
export interface ProjectedMessage {
  readonly seq: number;
  readonly subject: string;
  readonly data: Uint8Array;
  readonly time: Date;
  /** A NATS header of the message (LOGS carries offsets and exit records in headers). */
  readonly header?: (name: string) => string | undefined;
}

/** The message a projection applies, from a JetStream message. */
export function projectedMessage(m: JsMsg): ProjectedMessage {
  return { seq: m.seq, subject: m.subject, data: m.data, time: new Date(Math.floor(m.info.timestampNanos / 1e6)), header: (name) => m.headers?.get(name) || undefined };
}

export interface RunningProjector {
  stop(): Promise<void>;
}

/** Reads a projector's committed position (0 when it never ran). */
export async function projectorPosition(pool: Pool, name: string): Promise<number> {
  const r = await pool.query<{ seq: string }>('SELECT seq FROM projector_positions WHERE name = $1', [name]);
  return r.rowCount ? Number(r.rows[0]!.seq) : 0;
}

/** Waits until the projector has applied `seq` (read-your-writes after an append). */
export async function waitForProjection(pool: Pool, name: string, seq: number, timeoutMs = 10_000): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if ((await projectorPosition(pool, name)) >= seq) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 15));
  }
}

function lockKey(name: string): string {
  let h = 0;
  for (const ch of `projector:${name}`) h = (Math.imul(h, 31) + ch.charCodeAt(0)) | 0;
  return String(h);
}

/**
 * Runs a projection: one leader at a time across replicas (a session advisory lock); the leader
 * reads the stream from its committed position with an ordered consumer and applies messages in
 * batches, each batch in one transaction together with the new position.
 */
export function runProjector(nats: Nats, pool: Pool, p: Projection, logger: Logger, service = 'projector'): RunningProjector {
  let stopped = false;
  let iter: ConsumerMessages | undefined;
  let lockClient: PoolClient | undefined;

  const applyBatch = async (batch: JsMsg[]) => {
    const c = await pool.connect();
    try {
      await c.query('BEGIN');
      const pos = await c.query<{ seq: string }>('SELECT seq FROM projector_positions WHERE name = $1 FOR UPDATE', [p.name]);
      const current = pos.rowCount ? Number(pos.rows[0]!.seq) : 0;
      let last = current;
      for (const m of batch) {
        if (m.seq <= last) continue;
        try {
          await c.query('SAVEPOINT one');
          // A message published in a trace is applied in a span of that trace (the command's trace
          // shows when each read model took it); the others in none.
          const traceparent = m.headers?.get('traceparent');
          if (traceparent) {
            const attributes = { 'messaging.destination.name': m.subject, 'messaging.message.sequence': m.seq, 'hp.projection': p.name };
            await inSpan(service, `project ${p.name}`, { kind: SpanKind.CONSUMER, parent: extractNatsHeaders(m.headers, ROOT_CONTEXT), attributes }, () => p.apply(c, projectedMessage(m)));
          } else await p.apply(c, projectedMessage(m));
          await c.query('RELEASE SAVEPOINT one');
        } catch (e) {
          // A message that cannot be applied is skipped (and logged), never allowed to block the read model.
          await c.query('ROLLBACK TO SAVEPOINT one');
          logger.error({ err: e, projection: p.name, seq: m.seq, subject: m.subject }, 'projection skipped a message');
        }
        last = m.seq;
      }
      await c.query(
        `INSERT INTO projector_positions (name, seq, updated_at) VALUES ($1, $2, now())
         ON CONFLICT (name) DO UPDATE SET seq = EXCLUDED.seq, updated_at = now()`,
        [p.name, last],
      );
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      c.release();
    }
  };

  const lead = async () => {
    const start = (await projectorPosition(pool, p.name)) + 1;
    const consumer = await nats.js.consumers.get(p.stream, {
      ...(p.filterSubject ? { filter_subjects: p.filterSubject } : {}),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: start,
    });
    iter = await consumer.consume({ ...LIVE_CONSUME, max_messages: 500 });
    let batch: JsMsg[] = [];
    for await (const m of iter) {
      batch.push(m);
      if (m.info.pending === 0 || batch.length >= 200) {
        await applyBatch(batch);
        batch = [];
      }
      if (stopped) break;
    }
  };

  const loop = async () => {
    while (!stopped) {
      try {
        lockClient = await pool.connect();
        // The session lock lives on this connection: when it breaks (a Postgres restart) the lock is
        // gone and another replica may lead, so stop leading and compete for the lock again.
        lockClient.once('error', () => void iter?.close().catch(() => undefined));
        const got = await lockClient.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [lockKey(p.name)]);
        if (!got.rows[0]!.ok) {
          lockClient.release();
          lockClient = undefined;
          await new Promise((r) => setTimeout(r, 1000));
          continue;
        }
        logger.info({ projection: p.name }, 'projector leading');
        await lead();
      } catch (e) {
        if (!stopped) logger.warn({ err: e, projection: p.name }, 'projector interrupted; restarting');
        await new Promise((r) => setTimeout(r, 500));
      } finally {
        if (lockClient) {
          await lockClient.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
          lockClient.release();
          lockClient = undefined;
        }
      }
    }
  };
  const done = loop();
  return {
    async stop() {
      stopped = true;
      await iter?.close().catch(() => undefined);
      await done;
    },
  };
}
