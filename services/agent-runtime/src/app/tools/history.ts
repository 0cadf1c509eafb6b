import { createHash } from 'node:crypto';
import { isTerminalTaskStatus } from '@handplane/domain';
import type { EarlierRead } from '../guards/guards';
import type { ReadOutputResult, ToolCall, TranscriptEntry } from '../model/transcript';
import type { HostPort } from './host';

/**
 * Ids derived from the run and the call: a call redone after a crash asks the same question or
 * requests the same approval (and its events deduplicate), instead of a second one.
 */
export function stableId(prefix: string, runId: string, callId: string): string {
  return `${prefix}-${createHash('sha256').update(`${runId}\0${callId}`).digest('hex').slice(0, 20)}`;
}

/** Tasks this conversation's runs started, most recent last (from `exec` results in the transcript). */
export function launchedTasks(history: readonly TranscriptEntry[]): string[] {
  const ids: string[] = [];
  for (const e of history) {
    if (e.kind !== 'tool_result' || e.name !== 'exec') continue;
    const taskId = (e.result as { taskId?: unknown } | null)?.taskId;
    if (typeof taskId === 'string') ids.push(taskId);
  }
  return [...new Set(ids)];
}

/** How many launched tasks are checked for G3 (the recent ones; older ones are in the read model). */
const RECENT = 50;

/**
 * G3's premise: the unfinished tasks of the conversation, checked live. Candidates are what the
 * runs launched plus what the read model lists (commands people started); the task log decides.
 */
export async function runningTasks(host: HostPort, conversationId: string, history: readonly TranscriptEntry[]): Promise<string[]> {
  const candidates = [...new Set([...launchedTasks(history).slice(-RECENT), ...(await host.unfinishedTasks(conversationId))])];
  const statuses = await Promise.all(candidates.map(async (id) => [id, await host.taskStatus(id)] as const));
  return statuses.filter(([, s]) => s !== 'unknown' && !isTerminalTaskStatus(s)).map(([id]) => id);
}

/** The successful `read_output` calls of run `runId` so far (for G3's repeated-read rule). */
export function readsOfRun(history: readonly TranscriptEntry[], runId: string): EarlierRead[] {
  const calls = new Map<string, ToolCall>();
  for (const e of history) if (e.kind === 'assistant' && e.runId === runId) for (const c of e.toolCalls) calls.set(c.callId, c);
  const reads: EarlierRead[] = [];
  for (const e of history) {
    if (e.kind !== 'tool_result' || e.name !== 'read_output' || !e.ok || !calls.has(e.callId)) continue;
    const r = e.result as ReadOutputResult;
    reads.push({ taskId: r.taskId, offset: r.offset, bytes: r.bytes, finished: isTerminalTaskStatus(r.status as never) });
  }
  return reads;
}
