import { headers as natsHeaders } from '@nats-io/transport-node';
import { injectNatsHeaders, inSpan, inTransaction, unary } from '@handplane/platform';
import type { CommandOutput } from '@handplane/domain';
import { advanceCursor, insertLogRows, recordLogsSeq, type Cursor } from './cursors.repository';
import { systemMetadata, type IngestorDeps } from './deps';
import type { LiveText } from './live-text';
import type { LogPiece } from './log-tiling';

/** The cursor moved under us (another instance holds the command now): drop it, do not retry. */
export class LeaseLost extends Error {
  constructor(commandId: string) {
    super(`lease on ${commandId} lost`);
    this.name = 'LeaseLost';
  }
}

/**
 * Makes one batch durable: in ONE transaction the cursor moves (only while we own the lease), the
 * rows are inserted and each row is published to LOGS; the transaction commits only after NATS acked
 * every publish, and records the LOGS sequence of the last one. Nothing is acknowledged to the runner
 * before the commit. `published` rows are already in LOGS (adopted after a failed commit): not re-sent.
 */
export async function commitBatch(deps: IngestorDeps, cur: Cursor, rows: readonly LogPiece[], to: number, published?: { lastSeq: number }): Promise<void> {
  await inSpan('log-ingestor', 'ingest commit', { attributes: { 'hp.bytes': to - cur.committedOffset, 'hp.rows': rows.length } }, () => commitInTransaction(deps, cur, rows, to, published));
}

async function commitInTransaction(deps: IngestorDeps, cur: Cursor, rows: readonly LogPiece[], to: number, published?: { lastSeq: number }): Promise<void> {
  const { settings, pool } = deps;
  await inTransaction(pool, async (c) => {
    const owned = await advanceCursor(c, { commandId: cur.commandId, owner: settings.instanceId, from: cur.committedOffset, to, leaseMs: settings.leaseMs });
    if (!owned) throw new LeaseLost(cur.commandId);
    // The insert and the publishes overlap (one Postgres round trip and one NATS round trip, not in a row).
    const [, lastSeq] = await allSettled([insertLogRows(c, cur.commandId, rows), published ? Promise.resolve(published.lastSeq) : publishChunks(deps, cur.commandId, rows)] as const);
    if (lastSeq > 0) await recordLogsSeq(c, cur.commandId, lastSeq);
  });
  cur.committedOffset = to;
  deps.stats.noteRows(rows, published !== undefined);
}

/**
 * Publishes the rows to LOGS; answers the highest sequence. Every publish is settled before this
 * returns, even when one fails: the next claim must see every chunk that reached the stream.
 */
async function publishChunks(deps: IngestorDeps, commandId: string, rows: readonly LogPiece[]): Promise<number> {
  const seqs = await allSettled(rows.map((row) => publishChunk(deps, commandId, row)));
  return Math.max(0, ...seqs);
}

/**
 * Like Promise.all, but waits for every promise before throwing the first error: nothing of a failed
 * batch may still be on its way to LOGS once its transaction rolled back.
 */
async function allSettled<T extends readonly unknown[]>(promises: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(promises);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as unknown as T;
}

async function publishChunk(deps: IngestorDeps, commandId: string, row: LogPiece): Promise<number> {
  const h = injectNatsHeaders(natsHeaders());
  h.set('Hp-Offset', String(row.offset));
  h.set('Hp-Stream', row.stream === 2 ? 'stderr' : 'stdout');
  const ack = await deps.nats.js.publish(deps.topology.log(commandId), row.data, { msgID: `${commandId}:${row.offset}`, headers: h });
  return ack.seq;
}

/** Tells the runner that everything below `offset` is durable upstream (it may free spool space). Best effort. */
export async function ackRunner(deps: IngestorDeps, address: string, commandId: string, offset: number): Promise<void> {
  try {
    const client = deps.clients.get(address);
    await unary(client.ack.bind(client), { commandId, offset }, 5_000);
  } catch (e) {
    // The next batch acks a larger offset; the runner keeps the spool meanwhile.
    deps.logger.debug({ err: e, commandId, offset }, 'ack to runner failed');
  }
}

/**
 * The live view: while the task is in its foreground window, committed bytes also go to the
 * conversation as `command.output` (display text; a failure here never fails ingestion).
 */
export async function publishLive(deps: IngestorDeps, cur: Cursor, live: LiveText, offset: number, data: Uint8Array, final: boolean): Promise<void> {
  if (!inForegroundWindow(deps, cur)) return;
  for (const slice of live.push(offset, data, final)) {
    if (slice.bytes === 0) continue;
    const event: CommandOutput = {
      type: 'command.output',
      data: { taskId: cur.taskId, commandId: cur.commandId, offset: slice.offset, text: slice.text, bytes: slice.bytes },
      metadata: systemMetadata(deps.clock),
    };
    try {
      await deps.store.publish(deps.topology.conv(cur.conversationId), event, `out:${cur.commandId}:${slice.offset}`);
    } catch (e) {
      deps.logger.warn({ err: e, commandId: cur.commandId, offset: slice.offset }, 'live output not published');
    }
  }
}

/** True while the task is inside its foreground window (the live view is on). */
export function inForegroundWindow(deps: IngestorDeps, cur: Cursor): boolean {
  return !!cur.foregroundUntil && deps.clock.now().getTime() < cur.foregroundUntil.getTime();
}
