import type { ExitRecord } from '@handplane/proto';
import { closeDrop } from './close-drop';
import type { Cursor } from './cursors.repository';
import type { IngestorDeps } from './deps';
import { adoptPublishedTail } from './logs-recovery';
import { capPlan, phaseOf } from './output-cap';
import { readDropping } from './read-drop';
import { readStoring, StreamProblem } from './read-store';
import { RunnerAcks } from './runner-acks';
import { RunnerLogStream } from './runner-log';
import { exitFacts, settleReadable } from './settle-result';

export { StreamProblem } from './read-store';

/** The runner is not in the registry (never was, or deregistered). */
export class RunnerMissing extends Error {
  constructor(readonly runnerId: string) {
    super(`runner ${runnerId} is not in the registry`);
    this.name = 'RunnerMissing';
  }
}

/**
 * Reads one claimed command from its runner, from the committed cursor to the exit record, and
 * settles its result as readable. Returns when settled; throws on any failure (the caller releases
 * the lease and retries) and when `signal` aborts (stop, or the lease was lost).
 */
export async function ingestCommand(deps: IngestorDeps, cur: Cursor, signal: AbortSignal): Promise<void> {
  const runner = await deps.registry.get(cur.runnerId);
  if (!runner) throw new RunnerMissing(cur.runnerId);
  await adoptPublishedTail(deps, cur);
  const acks = new RunnerAcks(deps, runner.address, cur.commandId);
  try {
    let exit = await readFromCursor(deps, cur, runner.address, acks, signal);
    if (cur.drop && !cur.drop.final) {
      await closeDrop(deps, cur, exit.endOffset);
      exit = await readFromCursor(deps, cur, runner.address, acks, signal);
    }
    if (exit.endOffset !== cur.committedOffset) {
      throw new StreamProblem(`exit record at ${exit.endOffset} but ${cur.committedOffset} bytes committed`);
    }
    await settleReadable(deps, cur, exitFacts(deps, cur, exit));
    acks.send(exit.endOffset);
  } finally {
    await acks.settled();
  }
}

/** One ReadLog from the committed cursor to the exit record: storing, and past the cap's head, dropping. */
async function readFromCursor(deps: IngestorDeps, cur: Cursor, address: string, acks: RunnerAcks, signal: AbortSignal): Promise<ExitRecord> {
  const call = deps.clients.get(address).readLog({ commandId: cur.commandId, fromOffset: cur.committedOffset, follow: true, maxChunkBytes: 0 });
  const stream = new RunnerLogStream(call, deps.settings.queueHighWaterBytes);
  const onAbort = () => stream.cancel();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const ctx = { deps, cur, stream, acks, signal };
    const phase = phaseOf(cur, capPlan(deps.settings.outputCapBytes));
    if (phase.kind === 'drop') {
      // Known in memory before the first step is committed: the exit may come before any step.
      cur.drop ??= { from: phase.droppedFrom, to: cur.committedOffset, final: false };
      return await readDropping(ctx, null);
    }
    const end = await readStoring(ctx, phase.limit);
    if (end.kind === 'exit') return end.exit;
    // The head is full: from here on only the cursor moves, until the exit shows where the tail starts.
    cur.drop = { from: cur.committedOffset, to: cur.committedOffset, final: false };
    return await readDropping(ctx, end.rest);
  } finally {
    signal.removeEventListener('abort', onAbort);
    stream.cancel();
  }
}
