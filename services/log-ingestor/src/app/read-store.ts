import { performance } from 'node:perf_hooks';
import { OutputStream, type ExitRecord, type OutputChunk } from '@handplane/proto';
import { CommitPipeline } from './commit-pipeline';
import type { Cursor } from './cursors.repository';
import type { IngestorDeps } from './deps';
import { LiveText } from './live-text';
import { PendingBatch, trimToNext, type LogPiece } from './log-tiling';
import { splitAt } from './output-cap';
import { publishPrompt } from './publish-prompt';
import { PromptWatch } from './prompt-watch';
import type { RunnerAcks } from './runner-acks';
import type { RunnerLogStream } from './runner-log';

/** One open ReadLog of a claimed command. */
export interface ReadContext {
  readonly deps: IngestorDeps;
  readonly cur: Cursor;
  readonly stream: RunnerLogStream;
  /** Acks to the runner, sent after each commit. */
  readonly acks: RunnerAcks;
  readonly signal: AbortSignal;
}

/** The stream ended or disagreed with what is stored; reading again from the committed cursor fixes it. */
export class StreamProblem extends Error {
  override name = 'StreamProblem';
}

/** How a storing read ended: at the exit record, or at the cap's head limit with what came past it. */
export type StoreEnd = { kind: 'exit'; exit: ExitRecord } | { kind: 'limit'; rest: LogPiece | null };

export function toPiece(c: OutputChunk): LogPiece {
  return { offset: c.offset, stream: c.stream === OutputStream.OUTPUT_STREAM_STDERR ? 2 : 1, data: c.data };
}

/**
 * Stores the output from the committed cursor in batches (each committed, then acknowledged to the
 * runner, then shown live; the next batch fills while one commits) until the exit record, or until
 * `limit` when the cap's head is full. Never returns or throws with a commit still running.
 */
export async function readStoring(ctx: ReadContext, limit: number | null): Promise<StoreEnd> {
  const { deps, cur, stream, signal } = ctx;
  const { flushBytes, flushMs, maxRowBytes, maxTextBytes } = deps.settings;
  const batch = new PendingBatch(cur.committedOffset, maxRowBytes);
  const pipeline = new CommitPipeline(ctx, new LiveText(maxTextBytes));
  const prompts = new PromptWatch(deps.settings.promptQuietMs ?? 0);
  // At most one commit per `flushMs` (or per `flushBytes`), counted from the last one: the first byte
  // after a quiet spell is committed (and shown) at once, a steady stream is batched.
  let lastFlushAt = performance.now() - flushMs;

  const flush = async (final: boolean) => {
    if (batch.bytes > 0 || final) {
      lastFlushAt = performance.now();
      const from = batch.start;
      const to = batch.end;
      await pipeline.submit(from, to, batch.take(), final);
    }
    if (final) await pipeline.settled();
  };

  try {
    for (;;) {
      if (signal.aborted) throw new Error(`reading ${cur.commandId} aborted`);
      pipeline.throwIfFailed();
      // While a commit runs, look at it again soon even if the runner is quiet: its failure must not wait for more output.
      const flushWait = batch.bytes > 0 ? Math.max(0, lastFlushAt + flushMs - performance.now()) : pipeline.busy ? flushMs : undefined;
      // A prompt at the end of the output is reported once the command has been quiet long enough.
      const promptWait = prompts.dueIn(performance.now());
      const wait = flushWait === undefined ? promptWait : promptWait === undefined ? flushWait : Math.min(flushWait, promptWait);
      const next = await stream.next(wait);
      if (next.kind === 'timeout') {
        await flush(false);
        const due = prompts.take(performance.now());
        if (due) await publishPrompt(deps, cur, due);
        continue;
      }
      if (next.kind === 'end') {
        await flush(false);
        await pipeline.settled();
        throw new StreamProblem(`runner ended the log of ${cur.commandId} at ${batch.end} without an exit record`);
      }
      const record = next.record.record;
      if (record?.$case === 'exit') {
        await flush(true);
        return { kind: 'exit', exit: record.value };
      }
      if (record?.$case !== 'chunk') continue;
      deps.stats.noteRecord(record.value.data.length);
      const piece = trimToNext(toPiece(record.value), batch.end);
      if (!piece) continue;
      const [below, past] = limit === null ? [piece, null] : splitAt(piece, limit);
      if (below) {
        batch.add(below);
        prompts.push(below.offset + below.data.length, below.data, performance.now());
      }
      deps.stats.noteBuffered(stream.queuedBytes + batch.bytes + pipeline.bytesInFlight);
      if (past) {
        await flush(false);
        await pipeline.settled();
        return { kind: 'limit', rest: past };
      }
      if (batch.bytes >= flushBytes) await flush(false);
    }
  } finally {
    // An error already on its way wins; a commit still running must end before the caller goes on.
    await pipeline.settled().catch(() => undefined);
  }
}
