import { performance } from 'node:perf_hooks';
import type { ExitRecord } from '@handplane/proto';
import { LeaseLost } from './commit-batch';
import { advanceDropped } from './drop.repository';
import { trimToNext, type LogPiece } from './log-tiling';
import { capPlan, droppableTo } from './output-cap';
import { StreamProblem, toPiece, type ReadContext } from './read-store';

/**
 * Past the cap's head: reads on to the exit record storing nothing. The cursor (and the Ack to the
 * runner) moves up to `read - tailBytes` in steps, so a restarted worker resumes near where this one
 * was, and the runner keeps just the bytes that may still be in the kept tail. Memory holds one record.
 * `cur.drop` is set by the caller (its `from` is where dropping began).
 */
export async function readDropping(ctx: ReadContext, first: LogPiece | null): Promise<ExitRecord> {
  const { deps, cur, stream, acks, signal } = ctx;
  const { flushBytes, flushMs, instanceId, leaseMs } = deps.settings;
  const tailBytes = capPlan(deps.settings.outputCapBytes)?.tailBytes ?? 0;
  // Each step is a small commit with no rows; bigger steps than a batch keep them rare.
  const step = 4 * flushBytes;
  let readTo = cur.committedOffset;
  let dirtySince = 0;

  const consume = (p: LogPiece) => {
    const piece = trimToNext(p, readTo);
    if (!piece) return;
    if (droppableTo(cur.committedOffset, readTo, tailBytes) === cur.committedOffset) dirtySince = performance.now();
    readTo = piece.offset + piece.data.length;
  };
  const progress = async () => {
    const to = droppableTo(cur.committedOffset, readTo, tailBytes);
    if (to === cur.committedOffset) return;
    const from = cur.drop?.from ?? cur.committedOffset;
    if (!(await advanceDropped(deps.pool, { commandId: cur.commandId, owner: instanceId, from: cur.committedOffset, to, droppedFrom: from, final: false, leaseMs }))) {
      throw new LeaseLost(cur.commandId);
    }
    cur.committedOffset = to;
    cur.drop = { from, to, final: false };
    acks.send(to);
  };

  if (first) consume(first);
  for (;;) {
    if (signal.aborted) throw new Error(`reading ${cur.commandId} aborted`);
    const pending = droppableTo(cur.committedOffset, readTo, tailBytes) - cur.committedOffset;
    const next = await stream.next(pending > 0 ? Math.max(0, flushMs - (performance.now() - dirtySince)) : undefined);
    if (next.kind === 'timeout') {
      await progress();
      continue;
    }
    if (next.kind === 'end') throw new StreamProblem(`runner ended the log of ${cur.commandId} at ${readTo} without an exit record`);
    const record = next.record.record;
    if (record?.$case === 'exit') {
      if (record.value.endOffset !== readTo) throw new StreamProblem(`exit record at ${record.value.endOffset} but ${readTo} bytes read`);
      return record.value;
    }
    if (record?.$case !== 'chunk') continue;
    deps.stats.noteRecord(record.value.data.length);
    deps.stats.noteBuffered(stream.queuedBytes + record.value.data.length);
    consume(toPiece(record.value));
    if (droppableTo(cur.committedOffset, readTo, tailBytes) - cur.committedOffset >= step) await progress();
  }
}
