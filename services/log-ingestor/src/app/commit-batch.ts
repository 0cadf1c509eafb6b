import { headers as natsHeaders } from '@nats-io/transport-node';
import { inTransaction, unary } from '@handplane/platform';
import type { CommandOutput } from '@handplane/domain';
import { advanceCursor, insertLogRows, type Cursor } from './cursors.repository';
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
 * every publish. Nothing is acknowledged to the runner before the commit.
 */
export async function commitBatch(deps: IngestorDeps, cur: Cursor, rows: readonly LogPiece[], to: number): Promise<void> {
  const { settings, pool } = deps;
  await inTransaction(pool, async (c) => {
    const owned = await advanceCursor(c, { commandId: cur.commandId, owner: settings.instanceId, from: cur.committedOffset, to, leaseMs: settings.leaseMs });
    if (!owned) throw new LeaseLost(cur.commandId);
    await insertLogRows(c, cur.commandId, rows);
    await Promise.all(rows.map((row) => publishChunk(deps, cur.commandId, row)));
  });
  cur.committedOffset = to;
}

async function publishChunk(deps: IngestorDeps, commandId: string, row: LogPiece): Promise<void> {
  const h = natsHeaders();
  h.set('Hp-Offset', String(row.offset));
  h.set('Hp-Stream', row.stream === 2 ? 'stderr' : 'stdout');
  await deps.nats.js.publish(deps.topology.log(commandId), row.data, { msgID: `${commandId}:${row.offset}`, headers: h });
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
  if (!cur.foregroundUntil || deps.clock.now().getTime() >= cur.foregroundUntil.getTime()) return;
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
