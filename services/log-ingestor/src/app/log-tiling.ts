/**
 * The byte arithmetic of the Command Log, kept pure: rows of one command tile `[0, end)` exactly,
 * with no gap and no overlap, whatever the runner re-sends after a reconnect.
 */

/** 1 = stdout, 2 = stderr (the `command_log.stream` column). */
export type StreamCode = 1 | 2;

/** A run of bytes at an offset of a command's combined output. */
export interface LogPiece {
  readonly offset: number;
  readonly stream: StreamCode;
  readonly data: Uint8Array;
}

/** The runner sent bytes beyond the next expected offset: something in between is missing. */
export class OffsetGap extends Error {
  constructor(
    readonly expected: number,
    readonly got: number,
  ) {
    super(`output gap: expected offset ${expected}, the runner sent ${got}`);
    this.name = 'OffsetGap';
  }
}

/**
 * Cuts from `chunk` what lies below `next` (already stored or already pending): `null` when nothing
 * new remains. A replayed chunk that straddles `next` keeps only its new tail, so no byte is stored twice.
 */
export function trimToNext(chunk: LogPiece, next: number): LogPiece | null {
  if (chunk.offset > next) throw new OffsetGap(next, chunk.offset);
  const end = chunk.offset + chunk.data.length;
  if (end <= next) return null;
  if (chunk.offset === next) return chunk;
  return { offset: next, stream: chunk.stream, data: chunk.data.subarray(next - chunk.offset) };
}

interface OpenRow {
  offset: number;
  stream: StreamCode;
  parts: Uint8Array[];
  length: number;
}

/**
 * Output waiting for its transaction. Contiguous bytes of one stream merge into rows of up to
 * `maxRowBytes` (fewer, bigger rows are what makes Postgres fast: FACTS.md).
 */
export class PendingBatch {
  private rows: OpenRow[] = [];
  private pendingBytes = 0;

  constructor(
    private startOffset: number,
    private readonly maxRowBytes = 64 * 1024,
  ) {}

  /** First offset of the batch (the committed offset). */
  get start(): number {
    return this.startOffset;
  }
  /** Next offset the batch expects. */
  get end(): number {
    return this.startOffset + this.pendingBytes;
  }
  get bytes(): number {
    return this.pendingBytes;
  }

  /** Adds a chunk, trimmed against `end`; returns the number of new bytes. Throws OffsetGap. */
  add(chunk: LogPiece): number {
    const piece = trimToNext(chunk, this.end);
    if (!piece) return 0;
    let data = piece.data;
    let offset = piece.offset;
    while (data.length > 0) {
      const last = this.rows[this.rows.length - 1];
      const room = last && last.stream === piece.stream ? this.maxRowBytes - last.length : 0;
      const row = room > 0 ? last! : this.openRow(offset, piece.stream);
      const take = Math.min(data.length, this.maxRowBytes - row.length);
      row.parts.push(data.subarray(0, take));
      row.length += take;
      data = data.subarray(take);
      offset += take;
    }
    this.pendingBytes += piece.data.length;
    return piece.data.length;
  }

  /** Hands out the rows and starts an empty batch at the old end. */
  take(): LogPiece[] {
    const out = this.rows.map((r) => ({ offset: r.offset, stream: r.stream, data: r.parts.length === 1 ? r.parts[0]! : concat(r.parts, r.length) }));
    this.startOffset = this.end;
    this.rows = [];
    this.pendingBytes = 0;
    return out;
  }

  private openRow(offset: number, stream: StreamCode): OpenRow {
    const row: OpenRow = { offset, stream, parts: [], length: 0 };
    this.rows.push(row);
    return row;
  }
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * Checks that rows (any order) tile `[0, end)`: returns the problems found, none when they do.
 * `end` defaults to the end of the last row.
 */
export function tilingProblems(rows: readonly { offset: number; length: number }[], end?: number): string[] {
  const sorted = [...rows].sort((a, b) => a.offset - b.offset);
  const problems: string[] = [];
  let next = 0;
  for (const r of sorted) {
    if (r.length <= 0) problems.push(`empty row at ${r.offset}`);
    if (r.offset > next) problems.push(`gap [${next}, ${r.offset})`);
    if (r.offset < next) problems.push(`overlap at ${r.offset} (covered up to ${next})`);
    next = Math.max(next, r.offset + r.length);
  }
  if (end !== undefined && next !== end) problems.push(`rows end at ${next}, expected ${end}`);
  return problems;
}
