import { headers as natsHeaders } from '@nats-io/transport-node';
import { inTransaction } from '@handplane/platform';
import { LeaseLost } from './commit-batch';
import type { Cursor } from './cursors.repository';
import { recordLogsSeq } from './cursors.repository';
import type { IngestorDeps } from './deps';
import { advanceDropped } from './drop.repository';
import { capPlan, droppableTo, truncationOf } from './output-cap';

/**
 * The exit record of a command past its cap's head fixes the dropped range: the cursor jumps to where
 * the kept tail starts, and when bytes were really dropped LOGS gets an explicit marker (empty
 * payload, `Hp-Truncated: {droppedFrom, droppedTo, droppedBytes}`, msg id `<commandId>:truncated`),
 * in the same transaction. The tail is then read again from the runner and stored as usual.
 */
export async function closeDrop(deps: IngestorDeps, cur: Cursor, endOffset: number): Promise<void> {
  const { pool, settings } = deps;
  const tailBytes = capPlan(settings.outputCapBytes)?.tailBytes ?? 0;
  const from = cur.drop?.from ?? cur.committedOffset;
  const to = droppableTo(cur.committedOffset, endOffset, tailBytes);
  const drop = { from, to, final: true };
  await inTransaction(pool, async (c) => {
    const owned = await advanceDropped(c, { commandId: cur.commandId, owner: settings.instanceId, from: cur.committedOffset, to, droppedFrom: from, final: true, leaseMs: settings.leaseMs });
    if (!owned) throw new LeaseLost(cur.commandId);
    const truncation = truncationOf(drop);
    if (!truncation) return;
    const h = natsHeaders();
    h.set('Hp-Truncated', JSON.stringify(truncation));
    h.set('Hp-Offset', String(truncation.droppedFrom));
    const ack = await deps.nats.js.publish(deps.topology.log(cur.commandId), new Uint8Array(0), { msgID: `${cur.commandId}:truncated`, headers: h });
    await recordLogsSeq(c, cur.commandId, ack.seq);
  });
  cur.committedOffset = to;
  cur.drop = drop;
  deps.logger.info({ commandId: cur.commandId, droppedFrom: from, droppedTo: to, endOffset }, 'output cap: dropped range fixed, storing the tail');
}
