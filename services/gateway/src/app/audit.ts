import { DeliverPolicy } from '@nats-io/jetstream';
import { Unavailable, ValidationError } from '@handplane/kernel';
import { decodeConversationEvent, decodeSandboxCommandEvent, decodeTaskEvent } from '@handplane/contracts';
import { requireConversation } from './conversation-read';
import { query } from './db';
import { resumeAfter } from './event-feed';
import type { GatewayResources, Principal } from './resources';
import { requireTask } from './task-read';

/**
 * One entry of the audit log: the event as the current build reads it (older versions upcast),
 * with the version it was written in, when, by whom, and which log it comes from.
 */
export interface AuditEntry {
  /** `conversation`: CONV `conv.<id>`; `task`: TASKS `task.<taskId>` and `cmd.<commandId>`. */
  source: 'conversation' | 'task';
  /** Stream sequence within the source's stream. */
  seq: number;
  time: string;
  type: string;
  /** The version as stored (the data shown is the current version's shape). */
  v: number | null;
  /** Who did it: the identity the event was written under. */
  actor: string | null;
  data: unknown;
}

/** A page of the audit log; `nextAfter` is set when more entries follow. */
export interface AuditPage {
  entries: AuditEntry[];
  nextAfter?: number;
}

export interface AuditApp {
  /** The conversation's log, paged by CONV sequence; `include=tasks` merges in its tasks' own events by time. */
  read(p: Principal, conversationId: string, q: { after?: unknown; limit?: unknown; include?: unknown }): Promise<AuditPage>;
  /** One task's own events (every attempt), in order. */
  task(p: Principal, taskId: string): Promise<AuditEntry[]>;
}

const MAX_LIMIT = 5000;

function parseLimit(raw: unknown): number {
  if (raw === undefined || raw === '') return 1000;
  const n = typeof raw === 'string' && /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new ValidationError(`limit must be 1 to ${MAX_LIMIT}`, [`limit: ${JSON.stringify(raw)}`]);
  return n;
}

function parseInclude(raw: unknown): boolean {
  if (raw === undefined || raw === '') return false;
  if (raw === 'tasks') return true;
  throw new ValidationError('include must be "tasks"', [`include: ${JSON.stringify(raw)}`]);
}

type Decode = (data: Uint8Array) => { type: string; data: unknown; metadata: { actor?: string } };

// The log keeps every version; an event this build cannot decode is still shown as written.
function entryOf(source: AuditEntry['source'], seq: number, time: string, data: Uint8Array, decode: Decode): AuditEntry {
  let raw: { type?: unknown; v?: unknown; data?: unknown; metadata?: { actor?: unknown } } = {};
  try {
    raw = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    /* not JSON at all */
  }
  const v = typeof raw.v === 'number' ? raw.v : null;
  try {
    const e = decode(data);
    return { source, seq, time, type: e.type, v, actor: e.metadata.actor ?? null, data: e.data };
  } catch {
    return { source, seq, time, type: typeof raw.type === 'string' ? raw.type : 'unreadable', v, actor: typeof raw.metadata?.actor === 'string' ? raw.metadata.actor : null, data: raw.data ?? null };
  }
}

const timeOf = (nanos: number) => new Date(Math.floor(nanos / 1e6)).toISOString();

export function auditApp(r: GatewayResources): AuditApp {
  /** Messages of one subject after `after`, at most `limit`, read with an ordered consumer. */
  async function readSubject(stream: string, subject: string, after: number, limit: number, decode: Decode, source: AuditEntry['source']): Promise<{ entries: AuditEntry[]; lastSeq: number }> {
    const last = await r.nats.jsm.streams.getMessage(stream, { last_by_subj: subject }).catch(() => null);
    const entries: AuditEntry[] = [];
    if (!last || last.seq <= after) return { entries, lastSeq: last?.seq ?? 0 };
    const consumer = await r.nats.js.consumers.get(stream, { filter_subjects: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: after + 1 });
    const iter = await consumer.consume({ max_messages: Math.min(limit, 1000) });
    try {
      for await (const m of iter) {
        entries.push(entryOf(source, m.seq, timeOf(m.info.timestampNanos), m.data, decode));
        if (m.seq >= last.seq || entries.length >= limit) break;
      }
    } finally {
      await iter.close().catch(() => undefined);
    }
    return { entries, lastSeq: last.seq };
  }

  /** A task's own events: `task.<id>` and `cmd.<commandId>` of every attempt, in stream order. */
  async function taskEntries(taskId: string, commandId: string): Promise<AuditEntry[]> {
    const t = r.topology;
    const task = (await readSubject(t.streams.TASKS, t.task(taskId), 0, 10_000, decodeTaskEvent as Decode, 'task')).entries;
    const commandIds = new Set([commandId]);
    for (const e of task) {
      const d = e.data as { commandId?: unknown };
      if (typeof d?.commandId === 'string') commandIds.add(d.commandId);
    }
    const cmds = await Promise.all([...commandIds].map(async (c) => (await readSubject(t.streams.TASKS, t.cmd(c), 0, 10_000, decodeSandboxCommandEvent as Decode, 'task')).entries));
    return [...task, ...cmds.flat()].sort((a, b) => a.seq - b.seq);
  }

  return {
    async read(p, conversationId, q) {
      await requireConversation(r.pool, p, conversationId);
      const after = resumeAfter(undefined, q.after);
      const limit = parseLimit(q.limit);
      const withTasks = parseInclude(q.include);
      const t = r.topology;
      try {
        const page = await readSubject(t.streams.CONV, t.conv(conversationId), after, limit, decodeConversationEvent as Decode, 'conversation');
        const tail = page.entries[page.entries.length - 1];
        const nextAfter = tail && tail.seq < page.lastSeq ? tail.seq : undefined;
        if (!withTasks) return nextAfter === undefined ? { entries: page.entries } : { entries: page.entries, nextAfter };
        // The page's time window: after the CONV event `after` (exclusive), up to this page's last
        // event (inclusive) or without end on the last page, so every task event shows on one page.
        const from = after > 0 ? await r.nats.jsm.streams.getMessage(t.streams.CONV, { seq: after }).then((m) => (m ? m.time.toISOString() : null)).catch(() => null) : null;
        const to = nextAfter !== undefined ? tail!.time : null;
        const tasks = await query<{ task_id: string; command_id: string }>(
          r.pool,
          `SELECT task_id, command_id FROM tasks
            WHERE conversation_id = $1 AND tenant = $2
              AND ($3::timestamptz IS NULL OR created_at <= $3::timestamptz + interval '1 second')
            ORDER BY created_at, task_id`,
          [conversationId, p.tenant, to],
        );
        const taskEvents = (await Promise.all(tasks.map((x) => taskEntries(x.task_id, x.command_id)))).flat().filter((e) => (from === null || e.time > from) && (to === null || e.time <= to));
        // Merge by time; within one millisecond the conversation's own order comes first.
        const entries = [...page.entries, ...taskEvents].sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.source === b.source ? a.seq - b.seq : a.source === 'conversation' ? -1 : 1));
        return nextAfter === undefined ? { entries } : { entries, nextAfter };
      } catch (cause) {
        if (cause instanceof ValidationError) throw cause;
        throw new Unavailable('cannot read the conversation log', { cause });
      }
    },

    async task(p, taskId) {
      const task = await requireTask(r.pool, p, taskId);
      try {
        return await taskEntries(task.task_id, task.command_id);
      } catch (cause) {
        throw new Unavailable('cannot read the task log', { cause });
      }
    },
  };
}
