import type { PoolClient } from 'pg';
import { decodeConversationEvent, MalformedEvent, type Topology } from '@handplane/contracts';
import type { ConversationEvent } from '@handplane/domain';
import type { Projection } from '@handplane/platform';

/** Names of the read models built here from CONV (see `services/gateway/README.md`, "Projections"). */
export const RUNS_PROJECTION = 'runs';
export const TODOS_PROJECTION = 'todos';
export const QUEUES_PROJECTION = 'queues';
export const TASK_PROMPTS_PROJECTION = 'task-prompts';

type Apply = (c: PoolClient, conversationId: string, seq: number, e: ConversationEvent) => Promise<void>;

/** The event's type without validating it: CONV carries all live output, most of it irrelevant here. */
function typeOf(data: Uint8Array): string {
  try {
    return String((JSON.parse(Buffer.from(data).toString('utf8')) as { type?: unknown })?.type);
  } catch (cause) {
    throw new MalformedEvent('conversation event: not JSON', { cause });
  }
}

function convProjection(t: Topology, name: string, tables: string[], types: string[], apply: Apply): Projection {
  const relevant = new Set(types);
  // CONV carries every byte of live output: a message that does not even mention one of the types
  // is skipped without parsing it (a mention, say inside some output text, is parsed and checked).
  const markers = types.map((x) => Buffer.from(`"${x}"`));
  return {
    name,
    stream: t.streams.CONV,
    tables,
    async apply(c, m) {
      const bytes = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength);
      if (!markers.some((mk) => bytes.includes(mk))) return;
      if (!relevant.has(typeOf(m.data))) return;
      // The subject names the aggregate: `[<prefix>.]conv.<conversationId>`.
      await apply(c, m.subject.slice(m.subject.lastIndexOf('.') + 1), m.seq, decodeConversationEvent(m.data));
    },
  };
}

/** `runs`: one row per run of the agent, its trigger and how it ended. */
export function runsProjection(t: Topology): Projection {
  return convProjection(t, RUNS_PROJECTION, ['runs'], ['run.started', 'run.finished'], async (c, conversationId, seq, e) => {
    if (e.type === 'run.started') {
      const d = e.data;
      // A waiting run that resumes starts again under the same id.
      await c.query(
        `INSERT INTO runs (run_id, conversation_id, user_id, trigger, trigger_ref, status, started_seq, started_at, last_seq)
         VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, $6)
         ON CONFLICT (run_id) DO UPDATE SET status = 'running', detail = NULL, finished_at = NULL, last_seq = EXCLUDED.last_seq WHERE runs.last_seq < EXCLUDED.last_seq`,
        [d.runId, conversationId, d.userId, d.trigger, d.taskId ?? d.messageId ?? d.questionId ?? d.approvalId ?? null, seq, e.metadata.at],
      );
    } else if (e.type === 'run.finished') {
      await c.query(`UPDATE runs SET status = $2, detail = $3, finished_at = $4, last_seq = $5 WHERE run_id = $1 AND last_seq < $5`, [
        e.data.runId,
        e.data.outcome,
        e.data.detail ?? null,
        e.metadata.at,
        seq,
      ]);
    }
  });
}

/** `todos`: the conversation's current todo list, one row per item, in order; `todos.updated` replaces it. */
export function todosProjection(t: Topology): Projection {
  return convProjection(t, TODOS_PROJECTION, ['todos'], ['todos.updated'], async (c, conversationId, seq, e) => {
    if (e.type !== 'todos.updated') return;
    await c.query('DELETE FROM todos WHERE conversation_id = $1', [conversationId]);
    const waited = new Set(e.data.waitForTasks);
    for (const [i, todo] of e.data.todos.entries()) {
      await c.query(
        `INSERT INTO todos (conversation_id, todo_id, position, content, status, task_ids, waited_on, run_id, updated_seq)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9) ON CONFLICT (conversation_id, todo_id) DO NOTHING`,
        [conversationId, todo.id, i, todo.content, todo.status, JSON.stringify(todo.taskIds), todo.taskIds.some((x) => waited.has(x)), e.data.runId ?? null, seq],
      );
    }
  });
}

async function enqueue(c: PoolClient, conversationId: string, seq: number, kind: string, itemId: string, userId: string, at: string): Promise<void> {
  await c.query(
    `INSERT INTO conversation_queue (conversation_id, seq, kind, item_id, user_id, queued_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
    [conversationId, seq, kind, itemId, userId, at],
  );
}

/**
 * `conversation_queue`: what was queued for the agent (user messages, answers, human approval
 * decisions, task completions) and the run each one started, as the log shows it. Items consumed
 * without a run of their own (steering messages, results read early) are visible only in the
 * runtime's `inbox`/`wakeups`, which are its service state (README).
 */
export function queuesProjection(t: Topology): Projection {
  const types = ['message.user', 'question.answered', 'approval.resolved', 'task.internal_event', 'run.started'];
  return convProjection(t, QUEUES_PROJECTION, ['conversation_queue'], types, async (c, id, seq, e) => {
    const at = e.metadata.at;
    switch (e.type) {
      case 'message.user':
        return enqueue(c, id, seq, 'message', e.data.messageId, e.data.userId, at);
      case 'question.answered':
        return enqueue(c, id, seq, 'answer', e.data.questionId, e.data.by, at);
      case 'approval.resolved':
        // Automated decisions are the runtime's own and never queued.
        return e.data.automated ? undefined : enqueue(c, id, seq, 'approval', e.data.approvalId, e.data.by, at);
      case 'task.internal_event':
        return enqueue(c, id, seq, 'task_event', `${e.data.taskId}:${e.data.attempt}`, e.data.userId, at);
      case 'run.started': {
        const d = e.data;
        const target =
          d.trigger === 'message' ? ['message', d.messageId] : d.trigger === 'answer' ? ['answer', d.questionId] : d.trigger === 'approval' ? ['approval', d.approvalId] : ['task_event', d.taskId];
        if (!target[1]) return;
        const match = target[0] === 'task_event' ? `split_part(item_id, ':', 1) = $3` : 'item_id = $3';
        await c.query(
          `UPDATE conversation_queue SET started_run_id = $4, started_seq = $5
            WHERE conversation_id = $1 AND kind = $2 AND ${match} AND started_run_id IS NULL AND seq < $5`,
          [id, target[0], target[1], d.runId, seq],
        );
        return;
      }
      default:
        return;
    }
  });
}

/**
 * `task_prompts`: the last prompt each task stopped at (`task.awaiting_input`, from the ingestor's
 * prompt watch) and the first input after it (`task.stdin` of the same attempt). A later prompt
 * replaces the row. The registry shows a running task as awaiting input while its attempt's prompt
 * has no input after it.
 */
export function taskPromptsProjection(t: Topology): Projection {
  return convProjection(t, TASK_PROMPTS_PROJECTION, ['task_prompts'], ['task.awaiting_input', 'task.stdin'], async (c, _conversationId, seq, e) => {
    if (e.type === 'task.awaiting_input') {
      await c.query(
        `INSERT INTO task_prompts (task_id, command_id, attempt, prompt, "offset", asked_at, asked_seq) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (task_id) DO UPDATE SET command_id = EXCLUDED.command_id, attempt = EXCLUDED.attempt, prompt = EXCLUDED.prompt,
           "offset" = EXCLUDED."offset", asked_at = EXCLUDED.asked_at, asked_seq = EXCLUDED.asked_seq, answered_seq = NULL
         WHERE task_prompts.asked_seq < EXCLUDED.asked_seq`,
        [e.data.taskId, e.data.commandId, e.data.attempt, e.data.prompt, e.data.offset, e.metadata.at, seq],
      );
    } else if (e.type === 'task.stdin') {
      await c.query(`UPDATE task_prompts SET answered_seq = $3 WHERE task_id = $1 AND attempt = $2 AND asked_seq < $3 AND answered_seq IS NULL`, [e.data.taskId, e.data.attempt, seq]);
    }
  });
}
