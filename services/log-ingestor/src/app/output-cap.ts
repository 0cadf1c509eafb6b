import type { OutputTruncation } from '@handplane/domain';
import type { DroppedRange } from './cursors.repository';
import type { LogPiece } from './log-tiling';

/**
 * The arithmetic of OUTPUT_CAP_BYTES, kept pure. The Command Log keeps the first `headBytes` and the
 * last `tailBytes` of a command's output at their real offsets. Past the head the ingestor keeps
 * reading (so the runner may free its spool) but stores nothing, moving its cursor only up to
 * `read - tailBytes`: the bytes that may still be in the final tail stay unacknowledged in the
 * runner's spool, never in the ingestor's memory. The exit record fixes where the tail starts; the
 * tail is then read again from the runner and stored as usual.
 */
export interface CapPlan {
  readonly headBytes: number;
  readonly tailBytes: number;
}

/** The plan for a cap; null when there is none (0). */
export function capPlan(capBytes: number): CapPlan | null {
  if (capBytes <= 0) return null;
  const headBytes = Math.floor(capBytes / 2);
  return { headBytes, tailBytes: capBytes - headBytes };
}

/** What a worker does from the committed cursor: store (up to `limit`, when there is one) or drop. */
export type Phase = { kind: 'store'; limit: number | null } | { kind: 'drop'; droppedFrom: number };

/** The phase of a cursor. A fixed (final) range means the tail is being stored: no limit any more. */
export function phaseOf(cur: { committedOffset: number; drop: DroppedRange | null }, plan: CapPlan | null): Phase {
  if (!plan || cur.drop?.final) return { kind: 'store', limit: null };
  if (cur.drop) return { kind: 'drop', droppedFrom: cur.drop.from };
  if (cur.committedOffset >= plan.headBytes) return { kind: 'drop', droppedFrom: cur.committedOffset };
  return { kind: 'store', limit: plan.headBytes };
}

/**
 * How far the cursor may move across dropped bytes once everything below `readTo` was read: the last
 * `tailBytes` may still belong to the kept tail. At the exit (`readTo` = end offset) it is where the tail starts.
 */
export function droppableTo(committed: number, readTo: number, tailBytes: number): number {
  return Math.max(committed, readTo - tailBytes);
}

/** The truncation an event records for a dropped range; undefined when nothing was dropped. */
export function truncationOf(drop: DroppedRange | null): OutputTruncation | undefined {
  if (!drop || drop.to <= drop.from) return undefined;
  return { droppedFrom: drop.from, droppedTo: drop.to, droppedBytes: drop.to - drop.from };
}

/** Cuts a piece at `offset`: the part below it and the part from it (either may be null). */
export function splitAt(piece: LogPiece, offset: number): [LogPiece | null, LogPiece | null] {
  const end = piece.offset + piece.data.length;
  if (offset <= piece.offset) return [null, piece];
  if (offset >= end) return [piece, null];
  const at = offset - piece.offset;
  return [
    { offset: piece.offset, stream: piece.stream, data: piece.data.subarray(0, at) },
    { offset, stream: piece.stream, data: piece.data.subarray(at) },
  ];
}
