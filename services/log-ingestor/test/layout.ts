import { createHash } from 'node:crypto';
import type { MsgRequest } from '@nats-io/jetstream';
import type { Pool } from 'pg';
import type { Topology } from '@handplane/contracts';
import type { Nats } from '@handplane/platform';

/** A contiguous run of stored bytes and the SHA-256 of its bytes. */
export interface Run {
  from: number;
  to: number;
  sha: string;
}

/**
 * How a command's bytes lie in a store: runs of contiguous bytes (one run `[0, end)` when nothing is
 * missing), bytes seen twice (an overlap, or a chunk repeated), and the largest piece.
 */
export interface Layout {
  runs: Run[];
  pieces: number;
  duplicatedBytes: number;
  maxPiece: number;
  streams: Set<number>;
}

/** Folds pieces given in offset order into runs, hashing as it goes (memory: one piece at a time). */
class LayoutBuilder {
  readonly layout: Layout = { runs: [], pieces: 0, duplicatedBytes: 0, maxPiece: 0, streams: new Set() };
  private hash = createHash('sha256');
  private run: { from: number; to: number } | null = null;

  add(offset: number, data: Buffer | Uint8Array, stream: number): void {
    const l = this.layout;
    l.pieces++;
    l.maxPiece = Math.max(l.maxPiece, data.length);
    l.streams.add(stream);
    const end = offset + data.length;
    if (this.run && offset < this.run.to) {
      l.duplicatedBytes += Math.min(end, this.run.to) - offset;
      if (end <= this.run.to) return;
      data = data.subarray(this.run.to - offset);
      offset = this.run.to;
    }
    if (!this.run || offset > this.run.to) {
      this.close();
      this.run = { from: offset, to: offset };
    }
    this.hash.update(data);
    this.run.to = end;
  }

  done(): Layout {
    this.close();
    return this.layout;
  }

  private close(): void {
    if (this.run) this.layout.runs.push({ ...this.run, sha: this.hash.digest('hex') });
    this.hash = createHash('sha256');
    this.run = null;
  }
}

/** The Command Log of one command, read in pages (a 200 MB output never sits in memory at once). */
export async function storedLayout(pool: Pool, commandId: string): Promise<Layout> {
  const b = new LayoutBuilder();
  for (let after = -1; ; ) {
    const r = await pool.query<{ offset: string; stream: number; data: Buffer }>(
      'SELECT "offset", stream, data FROM command_log WHERE command_id = $1 AND "offset" > $2 ORDER BY "offset" LIMIT 256',
      [commandId, after],
    );
    for (const row of r.rows) b.add(Number(row.offset), row.data, row.stream);
    if (r.rows.length < 256) return b.done();
    after = Number(r.rows[r.rows.length - 1]!.offset);
  }
}

/** The non-chunk records of `log.<commandId>`: the exit record and the truncation marker. */
export interface LogsMarkers {
  exits: { msgId: string; record: Record<string, unknown> }[];
  truncations: { msgId: string; offset: number; record: Record<string, unknown> }[];
  /** Chunk messages above the LOGS payload limit (must be none). */
  oversized: number;
}

/** LOGS `log.<commandId>` in stream order: its chunks as a layout, and its markers. */
export async function logsLayout(nats: Nats, t: Topology, commandId: string, maxPayload = 1024 * 1024): Promise<Layout & LogsMarkers> {
  const subject = t.log(commandId);
  const b = new LayoutBuilder();
  const markers: LogsMarkers = { exits: [], truncations: [], oversized: 0 };
  const chunks: { offset: number; data: Uint8Array; stream: number }[] = [];
  for (let seq = 1; ; ) {
    const m = await nats.jsm.streams.getMessage(t.streams.LOGS, { seq, next_by_subj: subject } as unknown as MsgRequest);
    if (!m) break;
    seq = m.seq + 1;
    const msgId = m.header.get('Nats-Msg-Id');
    if (m.header.get('Hp-Exit')) markers.exits.push({ msgId, record: JSON.parse(m.header.get('Hp-Exit')) });
    else if (m.header.get('Hp-Truncated')) markers.truncations.push({ msgId, offset: Number(m.header.get('Hp-Offset')), record: JSON.parse(m.header.get('Hp-Truncated')) });
    else {
      if (msgId !== `${commandId}:${m.header.get('Hp-Offset')}`) throw new Error(`chunk with msg id ${msgId} at ${m.header.get('Hp-Offset')}`);
      if (m.data.length > maxPayload) markers.oversized++;
      chunks.push({ offset: Number(m.header.get('Hp-Offset')), data: m.data, stream: m.header.get('Hp-Stream') === 'stderr' ? 2 : 1 });
    }
  }
  // Stream order is offset order when all is well; sorting keeps a misordered chunk visible as a duplicate or gap, not hidden.
  for (const c of chunks.sort((x, y) => x.offset - y.offset)) b.add(c.offset, c.data, c.stream);
  return { ...b.done(), ...markers };
}
