import { performance } from 'node:perf_hooks';
import { OutputStream, type ExitRecord, type OutputChunk } from '@handplane/proto';
import { ackRunner, commitBatch, publishLive } from './commit-batch';
import type { Cursor } from './cursors.repository';
import type { IngestorDeps } from './deps';
import { LiveText } from './live-text';
import { PendingBatch } from './log-tiling';
import { RunnerLogStream } from './runner-log';
import { exitFacts, settleReadable } from './settle-result';

/** The runner is not in the registry (never was, or deregistered). */
export class RunnerMissing extends Error {
  constructor(readonly runnerId: string) {
    super(`runner ${runnerId} is not in the registry`);
    this.name = 'RunnerMissing';
  }
}

/** The stream ended or disagreed with what is stored; reading again from the committed cursor fixes it. */
export class StreamProblem extends Error {
  override name = 'StreamProblem';
}

/**
 * Reads one claimed command from its runner, from the committed cursor to the exit record, and
 * settles its result as readable. Returns when settled; throws on any failure (the caller releases
 * the lease and retries) and when `signal` aborts (stop, or the lease was lost).
 */
export async function ingestCommand(deps: IngestorDeps, cur: Cursor, signal: AbortSignal): Promise<void> {
  const runner = await deps.registry.get(cur.runnerId);
  if (!runner) throw new RunnerMissing(cur.runnerId);
  const client = deps.clients.get(runner.address);
  const stream = new RunnerLogStream(client.readLog({ commandId: cur.commandId, fromOffset: cur.committedOffset, follow: true, maxChunkBytes: 0 }));
  const onAbort = () => stream.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const exit = await readUntilExit(deps, cur, stream, runner.address, signal);
    if (exit.endOffset !== cur.committedOffset) {
      throw new StreamProblem(`exit record at ${exit.endOffset} but ${cur.committedOffset} bytes committed`);
    }
    await settleReadable(deps, cur, exitFacts(deps, cur, exit));
    await ackRunner(deps, runner.address, cur.commandId, exit.endOffset);
  } finally {
    signal.removeEventListener('abort', onAbort);
    stream.cancel();
  }
}

async function readUntilExit(deps: IngestorDeps, cur: Cursor, stream: RunnerLogStream, address: string, signal: AbortSignal): Promise<ExitRecord> {
  const { flushBytes, flushMs, maxRowBytes, maxTextBytes } = deps.settings;
  const batch = new PendingBatch(cur.committedOffset, maxRowBytes);
  const live = new LiveText(maxTextBytes);
  let firstByteAt = 0;

  const flush = async (final: boolean) => {
    if (batch.bytes === 0 && !final) return;
    const from = batch.start;
    const to = batch.end;
    const rows = batch.take();
    if (rows.length > 0) {
      await commitBatch(deps, cur, rows, to);
      await ackRunner(deps, address, cur.commandId, to);
    }
    const data = rows.length === 1 ? rows[0]!.data : Buffer.concat(rows.map((r) => r.data));
    await publishLive(deps, cur, live, from, data, final);
  };

  for (;;) {
    if (signal.aborted) throw new Error(`reading ${cur.commandId} aborted`);
    const wait = batch.bytes > 0 ? Math.max(0, flushMs - (performance.now() - firstByteAt)) : undefined;
    const next = await stream.next(wait);
    if (next.kind === 'timeout') {
      await flush(false);
      continue;
    }
    if (next.kind === 'end') {
      await flush(false);
      throw new StreamProblem(`runner ended the log of ${cur.commandId} at ${batch.end} without an exit record`);
    }
    const record = next.record.record;
    if (record?.$case === 'chunk') {
      if (batch.bytes === 0) firstByteAt = performance.now();
      batch.add(toPiece(record.value));
      if (batch.bytes >= flushBytes) await flush(false);
    } else if (record?.$case === 'exit') {
      await flush(true);
      return record.value;
    }
  }
}

function toPiece(c: OutputChunk) {
  return { offset: c.offset, stream: c.stream === OutputStream.OUTPUT_STREAM_STDERR ? (2 as const) : (1 as const), data: c.data };
}
