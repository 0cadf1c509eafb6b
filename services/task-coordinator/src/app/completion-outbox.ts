import type { Topology } from '@handplane/contracts';
import type { InternalTaskEvent, TaskFacts, TaskFinished } from '@handplane/domain';
import type { Clock } from '@handplane/kernel';
import { inTransaction, type EventStore, type Logger } from '@handplane/platform';
import type { Pool, PoolClient } from 'pg';

type Deps = { t: Topology; store: EventStore; pool: Pool; clock: Clock; logger: Logger };

interface Row {
  task_id: string;
  attempt: number;
  conversation_id: string;
  payload: Pick<InternalTaskEvent, 'data' | 'metadata'>;
}

/** The internal task event (G9) a finished task produces: it carries the user who started the task. */
export function internalEventFor(task: TaskFacts, f: TaskFinished): InternalTaskEvent {
  const d = f.data;
  return {
    type: 'task.internal_event',
    data: {
      taskId: d.taskId,
      commandId: d.commandId,
      attempt: d.attempt,
      userId: task.userId,
      origin: task.origin,
      ...(task.runId ? { runId: task.runId } : {}),
      status: d.status,
      exitCode: d.exitCode,
      signal: d.signal,
      resultState: d.resultState,
      outputBytes: d.outputBytes,
      ...(d.receipt ? { receipt: d.receipt } : {}),
    },
    metadata: { at: f.metadata.at, actor: task.userId },
  };
}

const COLUMNS = 'task_id, attempt, conversation_id, payload';
const PENDING_ONE = `SELECT ${COLUMNS} FROM task_notifications WHERE task_id = $1 AND attempt = $2 AND published_at IS NULL FOR UPDATE SKIP LOCKED`;
const PENDING_OLDEST = `SELECT ${COLUMNS} FROM task_notifications WHERE published_at IS NULL ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`;

/** Publishes locked rows to CONV and marks them; stops at the first failure (the sweep retries). */
async function publishRows(d: Deps, c: PoolClient, rows: Row[]): Promise<number> {
  let done = 0;
  for (const row of rows) {
    const event: InternalTaskEvent = { type: 'task.internal_event', ...row.payload };
    try {
      await d.store.publish(d.t.conv(row.conversation_id), event, `internal:${row.task_id}:${row.attempt}`);
    } catch (e) {
      d.logger.warn({ err: e, taskId: row.task_id, attempt: row.attempt }, 'internal task event not published yet; the sweep retries');
      break;
    }
    await c.query('UPDATE task_notifications SET published_at = $3 WHERE task_id = $1 AND attempt = $2', [row.task_id, row.attempt, d.clock.now()]);
    done++;
  }
  return done;
}

/**
 * Exactly one `task.internal_event` per (task, attempt) (G9, G10): the `task_notifications` row is
 * the decision, so a TaskFinished redelivered after the NATS duplicate window finds the row
 * published and publishes nothing. Rows are published under a row lock (SKIP LOCKED), so the
 * consumer and the sweeps of several coordinators never publish the same row at once.
 */
export class CompletionOutbox {
  constructor(private readonly d: Deps) {}

  /** Records the completion (once) and publishes it if nobody has. */
  async complete(task: TaskFacts, finished: TaskFinished): Promise<void> {
    const event = internalEventFor(task, finished);
    const { taskId, attempt } = event.data;
    await inTransaction(this.d.pool, (c) =>
      c.query(
        `INSERT INTO task_notifications (task_id, attempt, conversation_id, payload) VALUES ($1, $2, $3, $4)
         ON CONFLICT (task_id, attempt) DO NOTHING`,
        [taskId, attempt, task.conversationId, JSON.stringify({ data: event.data, metadata: event.metadata })],
      ),
    );
    await this.publish(PENDING_ONE, [taskId, attempt]);
  }

  /** The outbox sweep: publishes rows whose publication did not complete (crash, NATS down). */
  async sweep(limit = 100): Promise<number> {
    return this.publish(PENDING_OLDEST, [limit]);
  }

  private publish(select: string, params: unknown[]): Promise<number> {
    return inTransaction(this.d.pool, async (c) => publishRows(this.d, c, (await c.query<Row>(select, params)).rows));
  }
}
