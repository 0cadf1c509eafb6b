import { z } from 'zod';
import type { CommandView, LogIndexEntryView, QueueEntryView, RunView, TodoView } from '@handplane/contracts';
import { NotFound } from '@handplane/kernel';
import { requireConversation } from '../conversation-read';
import { query } from '../db';
import { isValidId } from '../ids';
import type { GatewayResources, Principal } from '../resources';
import { requireTask } from '../task-read';
import { parseInput } from '../validate';

/** A page of rows; `nextAfter` is set when more follow. */
export interface Page<T> {
  rows: T[];
  nextAfter?: number;
}

/** The read models the gateway hosts besides `conversations` (README "Read models"). */
export interface ReadModelsApp {
  runs(p: Principal, conversationId: string, q: { after?: unknown; limit?: unknown }): Promise<Page<RunView>>;
  todos(p: Principal, conversationId: string): Promise<TodoView[]>;
  queue(p: Principal, conversationId: string, q: { pending?: unknown; after?: unknown; limit?: unknown }): Promise<Page<QueueEntryView>>;
  commands(p: Principal, taskId: string): Promise<CommandView[]>;
  logIndex(p: Principal, taskId: string, commandId: string, q: { after?: unknown; limit?: unknown }): Promise<Page<LogIndexEntryView>>;
}

// `?x=` (empty) counts as absent, as on the audit route; a repeated parameter (an array) is a 422.
const optional = <S extends z.ZodTypeAny>(s: S) => z.preprocess((v) => (v === '' ? undefined : v), s.optional());
const integer = (what: string) => z.string().regex(/^\d{1,16}$/, `${what} must be a non-negative integer`).transform(Number);
const pageSchema = (max: number) =>
  z.object({
    after: optional(integer('after')),
    limit: optional(
      z
        .string()
        .regex(/^\d{1,5}$/, `limit must be 1 to ${max}`)
        .transform(Number)
        .refine((n) => n >= 1 && n <= max, `limit must be 1 to ${max}`),
    ),
  });
const runsQuery = pageSchema(1000);
const logIndexQuery = pageSchema(5000);
const queueQuery = pageSchema(1000).extend({ pending: optional(z.enum(['true', 'false'], { message: 'pending must be true or false' })) });

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const num = (v: string | number | null) => (v === null ? null : Number(v));

interface RunRow {
  run_id: string;
  user_id: string;
  trigger: string;
  trigger_ref: string | null;
  status: string;
  detail: string | null;
  started_seq: string;
  started_at: Date;
  finished_at: Date | null;
}

interface CommandRow {
  command_id: string;
  attempt: number;
  runner_id: string | null;
  exit_code: number | null;
  signal: string | null;
  end_offset: string | null;
  reason: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  result_state: string;
  output_bytes: string;
  truncation: CommandView['truncation'];
  delivered_to: string | null;
}

/** Rows after the first `limit` say more follow: the page ends at `cursor` of its last row. */
function pageOf<R, T>(rows: R[], limit: number, view: (r: R) => T, cursor: (r: R) => number): Page<T> {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return rows.length > limit && last ? { rows: page.map(view), nextAfter: cursor(last) } : { rows: page.map(view) };
}

export function readModelsApp(r: GatewayResources): ReadModelsApp {
  return {
    async runs(p, conversationId, q) {
      await requireConversation(r.pool, p, conversationId);
      const { after = 0, limit = 200 } = parseInput(runsQuery, q, 'query');
      const rows = await query<RunRow>(
        r.pool,
        `SELECT run_id, user_id, trigger, trigger_ref, status, detail, started_seq, started_at, finished_at FROM runs
          WHERE conversation_id = $1 AND started_seq > $2 ORDER BY started_seq LIMIT $3`,
        [conversationId, after, limit + 1],
      );
      const view = (x: RunRow): RunView => ({
        runId: x.run_id,
        userId: x.user_id,
        trigger: x.trigger,
        triggerRef: x.trigger_ref,
        status: x.status,
        detail: x.detail,
        startedAt: x.started_at.toISOString(),
        finishedAt: iso(x.finished_at),
      });
      return pageOf(rows, limit, view, (x) => Number(x.started_seq));
    },

    async todos(p, conversationId) {
      await requireConversation(r.pool, p, conversationId);
      const rows = await query<{ todo_id: string; content: string; status: string; task_ids: string[]; waited_on: boolean; run_id: string | null }>(
        r.pool,
        'SELECT todo_id, content, status, task_ids, waited_on, run_id FROM todos WHERE conversation_id = $1 ORDER BY position',
        [conversationId],
      );
      return rows.map((x) => ({ id: x.todo_id, content: x.content, status: x.status, taskIds: x.task_ids, waitedOn: x.waited_on, runId: x.run_id }));
    },

    async queue(p, conversationId, q) {
      await requireConversation(r.pool, p, conversationId);
      const parsed = parseInput(queueQuery, q, 'query');
      const { after = 0, limit = 500 } = parsed;
      const rows = await query<{ seq: string; kind: string; item_id: string; user_id: string; queued_at: Date; started_run_id: string | null; started_seq: string | null }>(
        r.pool,
        `SELECT seq, kind, item_id, user_id, queued_at, started_run_id, started_seq FROM conversation_queue
          WHERE conversation_id = $1 AND (NOT $2::boolean OR started_run_id IS NULL) AND seq > $3 ORDER BY seq LIMIT $4`,
        [conversationId, parsed.pending === 'true', after, limit + 1],
      );
      const view = (x: (typeof rows)[number]): QueueEntryView => ({
        seq: Number(x.seq),
        kind: x.kind,
        itemId: x.item_id,
        userId: x.user_id,
        queuedAt: x.queued_at.toISOString(),
        startedRunId: x.started_run_id,
        startedSeq: num(x.started_seq),
      });
      return pageOf(rows, limit, view, (x) => Number(x.seq));
    },

    async commands(p, taskId) {
      const task = await requireTask(r.pool, p, taskId);
      const rows = await query<CommandRow>(r.pool, 'SELECT * FROM commands WHERE task_id = $1 ORDER BY attempt, command_id', [task.task_id]);
      return rows.map((x) => ({
        commandId: x.command_id,
        attempt: x.attempt,
        runnerId: x.runner_id,
        exitCode: x.exit_code,
        signal: x.signal,
        endOffset: num(x.end_offset),
        reason: x.reason,
        startedAt: iso(x.started_at),
        finishedAt: iso(x.finished_at),
        resultState: x.result_state,
        outputBytes: Number(x.output_bytes),
        truncation: x.truncation ?? null,
        deliveredTo: x.delivered_to,
      }));
    },

    async logIndex(p, taskId, commandId, q) {
      const task = await requireTask(r.pool, p, taskId);
      // The command must be one of this task's attempts: the one its row names, or one `commands` ties to it.
      const ours =
        isValidId(commandId) &&
        (commandId === task.command_id || (await query(r.pool, 'SELECT 1 FROM commands WHERE command_id = $1 AND task_id = $2', [commandId, task.task_id])).length > 0);
      if (!ours) throw new NotFound('command not found');
      const parsed = parseInput(logIndexQuery, q, 'query');
      // Absent `after` starts before offset 0; `after=N` gives the rows at offsets greater than N.
      const after = parsed.after ?? -1;
      const limit = parsed.limit ?? 1000;
      // Up to four kinds share one offset (the primary key): fetch them too, so a page never splits an
      // offset and `after=<its last offset>` loses nothing. A page may hold up to 3 rows over `limit`.
      const rows = await query<{ kind: string; offset: string; bytes: number; logs_seq: string }>(
        r.pool,
        `SELECT kind, "offset", bytes, logs_seq FROM command_log_index WHERE command_id = $1 AND "offset" > $2 ORDER BY "offset", kind LIMIT $3`,
        [commandId, after, limit + 4],
      );
      let end = Math.min(limit, rows.length);
      while (end < rows.length && rows[end]!.offset === rows[end - 1]!.offset) end++;
      const view = (x: (typeof rows)[number]): LogIndexEntryView => ({ kind: x.kind, offset: Number(x.offset), bytes: x.bytes, logsSeq: Number(x.logs_seq) });
      return pageOf(rows, end, view, (x) => Number(x.offset));
    },
  };
}
