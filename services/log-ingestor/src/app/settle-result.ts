import { headers as natsHeaders } from '@nats-io/transport-node';
import { fold, IllegalState } from '@handplane/kernel';
import { decodeSandboxCommandEvent } from '@handplane/contracts';
import { sandboxCommandDecider, type ExitFacts, type OutputTruncation, type SandboxCommandCommand, type SandboxCommandState } from '@handplane/domain';
import { handleCommand } from '@handplane/platform';
import type { ExitRecord } from '@handplane/proto';
import { settleCursor, type Cursor } from './cursors.repository';
import { systemMetadata, type IngestorDeps } from './deps';
import { truncationOf } from './output-cap';

/** The exit record as the SandboxCommand aggregate records it (an exit code may be absent: `reason` says why). */
export function exitFacts(deps: IngestorDeps, cur: Cursor, exit: ExitRecord): ExitFacts {
  const iso = (ms: number) => (ms > 0 ? new Date(ms).toISOString() : deps.clock.now().toISOString());
  return {
    commandId: cur.commandId,
    taskId: cur.taskId,
    attempt: cur.attempt,
    runnerId: cur.runnerId,
    exitCode: exit.exitCode ?? null,
    signal: exit.signal || null,
    endOffset: exit.endOffset,
    startedAt: iso(exit.startedAtMs),
    finishedAt: iso(exit.finishedAtMs),
    reason: exit.reason,
  };
}

/** Decides a command on the SandboxCommand aggregate `cmd.<commandId>` (a repeat appends nothing). */
export async function decide(deps: IngestorDeps, commandId: string, command: SandboxCommandCommand, msgId: string) {
  return handleCommand({
    store: deps.store,
    stream: deps.topology.streams.TASKS,
    subject: deps.topology.cmd(commandId),
    decode: decodeSandboxCommandEvent,
    decider: sandboxCommandDecider,
    command,
    msgId: () => msgId,
  });
}

async function loadState(deps: IngestorDeps, commandId: string): Promise<SandboxCommandState> {
  const { events } = await deps.store.read(deps.topology.streams.TASKS, deps.topology.cmd(commandId), decodeSandboxCommandEvent);
  return fold(sandboxCommandDecider, events.map((e) => e.event));
}

/**
 * Every byte up to the exit record is committed (or inside the range the cap dropped, which the
 * readable event names): publish the exit record to LOGS, append `CommandExited` then
 * `CommandResultReadable`, and only then mark the cursor readable. A crash anywhere in between
 * replays this whole function, and the decider turns the repeats into no-ops.
 */
export async function settleReadable(deps: IngestorDeps, cur: Cursor, facts: ExitFacts): Promise<void> {
  const truncation = truncationOf(cur.drop);
  await publishExitRecord(deps, facts);
  try {
    await decide(deps, cur.commandId, { type: 'RecordExit', data: facts, metadata: systemMetadata(deps.clock) }, `${cur.commandId}:exited`);
    await deps.settings.faults?.afterExitRecorded?.(cur.commandId);
    const data = { outputBytes: facts.endOffset, ...(truncation ? { truncation } : {}) };
    await decide(deps, cur.commandId, { type: 'MarkReadable', data, metadata: systemMetadata(deps.clock) }, `${cur.commandId}:readable`);
  } catch (e) {
    if (e instanceof IllegalState && (await syncCursor(deps, cur))) return;
    throw e;
  }
  await settleCursor(deps.pool, { commandId: cur.commandId, owner: deps.settings.instanceId, state: 'readable', endOffset: facts.endOffset, exitCode: facts.exitCode, signal: facts.signal });
}

/**
 * The runner is lost: the committed prefix is all there will be. When the exit was already recorded
 * with every byte durable (a crash after `CommandExited`), the result is readable after all.
 */
export async function settleUnavailable(deps: IngestorDeps, cur: Cursor, reason: string): Promise<'readable' | 'unavailable'> {
  const state = await loadState(deps, cur.commandId);
  if (state.status === 'result_pending' && state.exit.endOffset === cur.committedOffset) {
    await settleReadable(deps, cur, state.exit);
    return 'readable';
  }
  if (state.status === 'none' || state.status === 'result_pending') {
    const truncation: OutputTruncation | undefined = truncationOf(cur.drop);
    const command: SandboxCommandCommand = {
      type: 'MarkUnavailable',
      data: { commandId: cur.commandId, taskId: cur.taskId, attempt: cur.attempt, durableBytes: cur.committedOffset, reason, ...(truncation ? { truncation } : {}) },
      metadata: systemMetadata(deps.clock),
    };
    await decide(deps, cur.commandId, command, `${cur.commandId}:unavailable`);
    await settleCursor(deps.pool, { commandId: cur.commandId, owner: deps.settings.instanceId, state: 'unavailable', endOffset: null, exitCode: null, signal: null, lastError: reason });
    return 'unavailable';
  }
  await syncCursor(deps, cur);
  return state.status === 'unavailable' ? 'unavailable' : 'readable';
}

/** The aggregate already settled (by an earlier attempt): make the cursor say the same. */
async function syncCursor(deps: IngestorDeps, cur: Cursor): Promise<boolean> {
  const s = await loadState(deps, cur.commandId);
  const owner = deps.settings.instanceId;
  if (s.status === 'readable' || s.status === 'delivered') {
    await settleCursor(deps.pool, { commandId: cur.commandId, owner, state: 'readable', endOffset: s.exit.endOffset, exitCode: s.exit.exitCode, signal: s.exit.signal });
    return true;
  }
  if (s.status === 'unavailable') {
    await settleCursor(deps.pool, { commandId: cur.commandId, owner, state: 'unavailable', endOffset: s.exit?.endOffset ?? null, exitCode: s.exit?.exitCode ?? null, signal: s.exit?.signal ?? null, lastError: s.reason });
    return true;
  }
  return false;
}

/** The exit record on LOGS: empty payload, the record as JSON in `Hp-Exit`. */
async function publishExitRecord(deps: IngestorDeps, facts: ExitFacts): Promise<void> {
  const h = natsHeaders();
  const { exitCode, signal, endOffset, startedAt, finishedAt, reason } = facts;
  h.set('Hp-Exit', JSON.stringify({ exitCode, signal, endOffset, startedAt, finishedAt, reason }));
  h.set('Hp-Offset', String(endOffset));
  await deps.nats.js.publish(deps.topology.log(facts.commandId), new Uint8Array(0), { msgID: `${facts.commandId}:exit`, headers: h });
}
