/**
 * High-water marks of what one ingestor instance holds in memory, so a test can prove that buffering
 * is bounded by construction (the largest value seen, not a timing or RSS threshold).
 */
export class IngestStats {
  /** Most bytes one command had in memory at once: records queued from the runner plus the pending batch. */
  maxBufferedBytes = 0;
  /** Largest record the runner sent. */
  maxRecordBytes = 0;
  /** Largest row written to `command_log` and LOGS. */
  maxRowBytes = 0;
  /** Rows written (and LOGS chunks published) by committed batches. */
  rowsCommitted = 0;
  /** Chunks found published by a batch that never committed, and adopted as they were. */
  rowsAdopted = 0;
  /** Output bytes made durable by committed batches (for `/metrics`). */
  bytesCommitted = 0;

  noteBuffered(bytes: number): void {
    if (bytes > this.maxBufferedBytes) this.maxBufferedBytes = bytes;
  }

  noteRecord(bytes: number): void {
    if (bytes > this.maxRecordBytes) this.maxRecordBytes = bytes;
  }

  noteRows(rows: readonly { data: Uint8Array }[], adopted = false): void {
    for (const r of rows) if (r.data.length > this.maxRowBytes) this.maxRowBytes = r.data.length;
    if (adopted) this.rowsAdopted += rows.length;
    else {
      this.rowsCommitted += rows.length;
      for (const r of rows) this.bytesCommitted += r.data.length;
    }
  }

  snapshot(): IngestStatsSnapshot {
    const { maxBufferedBytes, maxRecordBytes, maxRowBytes, rowsCommitted, rowsAdopted } = this;
    return { maxBufferedBytes, maxRecordBytes, maxRowBytes, rowsCommitted, rowsAdopted };
  }
}

/** A copy of the counters at one moment. */
export type IngestStatsSnapshot = Pick<IngestStats, 'maxBufferedBytes' | 'maxRecordBytes' | 'maxRowBytes' | 'rowsCommitted' | 'rowsAdopted'>;
