import type { MsgRequest, StoredMsg } from '@nats-io/jetstream';
import { commitBatch } from './commit-batch';
import type { Cursor } from './cursors.repository';
import type { IngestorDeps } from './deps';
import type { LogPiece } from './log-tiling';

/**
 * `next_by_subj` on the stream leader's STREAM.MSG.GET (nats-server ≥ 2.9; the client types it for
 * direct gets only). Not a direct get: a direct get may be answered by a replica that lags behind.
 */
const nextBySubject = (seq: number, subject: string) => ({ seq, next_by_subj: subject }) as unknown as MsgRequest;

/** A LOGS message as a chunk of output; null for the exit record and the truncation marker. */
function chunkOf(m: StoredMsg): LogPiece | null {
  if (m.data.length === 0 || m.header?.get('Hp-Exit') || m.header?.get('Hp-Truncated')) return null;
  const offset = Number(m.header?.get('Hp-Offset'));
  if (!Number.isSafeInteger(offset)) return null;
  return { offset, stream: m.header?.get('Hp-Stream') === 'stderr' ? 2 : 1, data: m.data };
}

/**
 * Chunks can reach LOGS from a batch whose Postgres transaction then failed (a crash, a failed
 * commit). Reading them again from the runner would cut rows at other offsets, and `Nats-Msg-Id`
 * (`<commandId>:<offset>`) would then keep a different row in LOGS than in `command_log`. So before
 * reading, the chunks published after the committed ones (`logs_seq`) are adopted as they are: the
 * contiguous run from the committed cursor is committed as rows without publishing again.
 * Returns the number of chunks adopted.
 */
export async function adoptPublishedTail(deps: IngestorDeps, cur: Cursor): Promise<number> {
  const { nats, topology: t, logger } = deps;
  const subject = t.log(cur.commandId);
  const after = cur.logsSeq ?? 0;
  const last = await nats.jsm.streams.getMessage(t.streams.LOGS, { last_by_subj: subject });
  if (!last || last.seq <= after) return 0;

  const rows: LogPiece[] = [];
  let next = cur.committedOffset;
  let lastSeq = 0;
  const strays: number[] = [];
  for (let seq = after + 1; seq <= last.seq; ) {
    const m = await nats.jsm.streams.getMessage(t.streams.LOGS, nextBySubject(seq, subject));
    if (!m) break;
    seq = m.seq + 1;
    const chunk = chunkOf(m);
    if (!chunk || chunk.offset + chunk.data.length <= next) continue;
    if (chunk.offset !== next) {
      strays.push(chunk.offset);
      continue;
    }
    rows.push(chunk);
    next += chunk.data.length;
    lastSeq = m.seq;
  }
  // Only a publish rejected between two accepted ones leaves a chunk off the run: say so loudly.
  if (strays.length) logger.warn({ commandId: cur.commandId, committed: cur.committedOffset, strays }, 'LOGS holds uncommitted chunks off the committed run');
  if (rows.length === 0) return 0;
  await commitBatch(deps, cur, rows, next, { lastSeq });
  logger.info({ commandId: cur.commandId, chunks: rows.length, to: next }, 'adopted chunks published by a batch that never committed');
  return rows.length;
}
