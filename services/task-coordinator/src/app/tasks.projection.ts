import { decodeSandboxCommandEvent, decodeTaskEvent, type Topology } from '@handplane/contracts';
import type { SandboxCommandEvent, TaskEvent } from '@handplane/domain';
import { assertNever } from '@handplane/kernel';
import type { Projection } from '@handplane/platform';
import type { PoolClient } from 'pg';

/** The projection's name: the gateway waits on its position after `start-task`. */
export const TASKS_PROJECTION = 'tasks';

const MS = `interval '1 millisecond'`;
/** A W3C traceparent (version 00), as kept in `tasks.traceparent`; anything else is not kept. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

// Every update is guarded by `last_seq < seq`, so applying one message twice changes nothing.
async function applyTask(c: PoolClient, seq: number, e: TaskEvent, traceparent: string | null): Promise<void> {
  const set = (assignments: string, params: unknown[]) =>
    c.query(`UPDATE tasks SET ${assignments}, last_seq = $2 WHERE task_id = $1 AND last_seq < $2`, [e.data.taskId, seq, ...params]);
  switch (e.type) {
    case 'TaskRegistered': {
      const d = e.data;
      await c.query(
        `INSERT INTO tasks (task_id, command_id, conversation_id, tenant, user_id, origin, run_id, command, cwd, status, background, attempt, epoch,
                            created_at, foreground_window_ms, timeout_ms, last_seq, traceparent)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'starting', false, $10, $11, $12, $13, $14, $15, $16)
         ON CONFLICT (task_id) DO NOTHING`,
        [d.taskId, d.commandId, d.conversationId, d.tenant, d.userId, d.origin, d.runId ?? null, d.command, d.cwd, d.attempt, d.epoch, d.registeredAt, d.foregroundWindowMs, d.timeoutMs, seq, traceparent],
      );
      return;
    }
    case 'TaskStarted':
      // Both windows are measured from the start (DESIGN.md §3).
      await set(
        `status = CASE WHEN status = 'starting' THEN 'running' ELSE status END, runner_id = $3, started_at = $4,
         foreground_until = $4::timestamptz + foreground_window_ms * ${MS}, deadline_at = $4::timestamptz + timeout_ms * ${MS}`,
        [e.data.runnerId, e.data.startedAt],
      );
      return;
    case 'TaskStartFailed':
      await set('status = status', []);
      return;
    case 'TaskBackgrounded':
      await set('background = true', []);
      return;
    case 'TaskStopRequested':
      await set(`status = CASE WHEN status IN ('starting', 'running') THEN 'stopping' ELSE status END, stop_reason = $3, stop_requested_at = $4`, [e.data.reason, e.data.requestedAt]);
      return;
    case 'TaskStopSignalled':
      await set('stop_signalled_at = $3', [e.data.signalledAt]);
      return;
    case 'TaskRetried':
      // The next attempt is a new command: everything measured from the last start starts over.
      await set(
        `status = 'starting', command_id = $3, attempt = $4, runner_id = NULL, started_at = NULL, foreground_until = NULL, deadline_at = NULL,
         exit_code = NULL, signal = NULL, output_bytes = 0, result_state = 'result_pending', receipt = NULL`,
        [e.data.commandId, e.data.attempt],
      );
      return;
    case 'TaskFinished': {
      const d = e.data;
      await set(
        `status = $3, exit_code = $4, signal = $5, output_bytes = $6, finished_at = $7,
         result_state = CASE WHEN result_state = 'delivered' THEN result_state ELSE $8 END, receipt = $9`,
        [d.status, d.exitCode, d.signal, d.outputBytes, d.finishedAt, d.resultState, d.receipt ? JSON.stringify(d.receipt) : null],
      );
      return;
    }
    default:
      assertNever(e, 'task event');
  }
}

async function applyCommand(c: PoolClient, seq: number, e: SandboxCommandEvent): Promise<void> {
  const set = (assignments: string, params: unknown[]) =>
    c.query(`UPDATE tasks SET ${assignments}, last_seq = $2 WHERE command_id = $1 AND last_seq < $2`, [e.data.commandId, seq, ...params]);
  const notDelivered = (state: string) => `result_state = CASE WHEN result_state = 'delivered' THEN result_state ELSE '${state}' END`;
  switch (e.type) {
    case 'CommandExited':
      await set('exit_code = $3, signal = $4, output_bytes = $5', [e.data.exitCode, e.data.signal, e.data.endOffset]);
      return;
    case 'CommandResultReadable':
      await set(`${notDelivered('readable')}, output_bytes = $3`, [e.data.outputBytes]);
      return;
    case 'CommandResultUnavailable':
      await set(`${notDelivered('unavailable')}, output_bytes = $3`, [e.data.durableBytes]);
      return;
    case 'CommandResultDelivered':
      await set(`result_state = 'delivered'`, []);
      return;
    default:
      assertNever(e, 'sandbox command event');
  }
}

/**
 * The `tasks` read model (the registry the API serves), from the whole TASKS stream: task events on
 * `task.*` and the result state of their commands on `cmd.*`.
 */
export function tasksProjection(t: Topology): Projection {
  const taskPrefix = t.all.task.slice(0, -1);
  const cmdPrefix = t.all.cmd.slice(0, -1);
  return {
    name: TASKS_PROJECTION,
    stream: t.streams.TASKS,
    tables: ['tasks'],
    async apply(c, m) {
      if (m.subject.startsWith(taskPrefix)) await applyTask(c, m.seq, decodeTaskEvent(m.data), TRACEPARENT.exec(m.header?.('traceparent') ?? '')?.[0] ?? null);
      else if (m.subject.startsWith(cmdPrefix)) await applyCommand(c, m.seq, decodeSandboxCommandEvent(m.data));
    },
  };
}
