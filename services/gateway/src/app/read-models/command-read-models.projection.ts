import type { PoolClient } from 'pg';
import { decodeSandboxCommandEvent, MalformedEvent, type Topology } from '@handplane/contracts';
import type { SandboxCommandEvent } from '@handplane/domain';
import { assertNever } from '@handplane/kernel';
import type { Projection } from '@handplane/platform';

/** Names of the read models built here from TASKS `cmd.*` and LOGS. */
export const COMMANDS_PROJECTION = 'commands';
export const COMMAND_LOG_INDEX_PROJECTION = 'command-log-index';

const notDelivered = (state: string) => `CASE WHEN commands.result_state = 'delivered' THEN 'delivered' ELSE '${state}' END`;

// Every event upserts the row (a result may be recorded before the exit is), guarded by last_seq.
async function applyCommand(c: PoolClient, seq: number, e: SandboxCommandEvent): Promise<void> {
  const d = e.data;
  const upsert = (columns: Record<string, unknown>, onConflict: string) => {
    const names = ['command_id', 'task_id', 'attempt', 'last_seq', ...Object.keys(columns)];
    const values = [d.commandId, d.taskId, d.attempt, seq, ...Object.values(columns)];
    return c.query(
      `INSERT INTO commands (${names.join(', ')}) VALUES (${values.map((_, i) => `$${i + 1}`).join(', ')})
       ON CONFLICT (command_id) DO UPDATE SET ${onConflict}, last_seq = EXCLUDED.last_seq WHERE commands.last_seq < EXCLUDED.last_seq`,
      values,
    );
  };
  switch (e.type) {
    case 'CommandExited': {
      const x = e.data;
      const cols = { runner_id: x.runnerId, exit_code: x.exitCode, signal: x.signal, end_offset: x.endOffset, reason: x.reason, started_at: x.startedAt, finished_at: x.finishedAt };
      await upsert(cols, Object.keys(cols).map((k) => `${k} = EXCLUDED.${k}`).join(', '));
      return;
    }
    case 'CommandResultReadable':
      await upsert(
        { result_state: 'readable', output_bytes: e.data.outputBytes, truncation: e.data.truncation ? JSON.stringify(e.data.truncation) : null },
        `result_state = ${notDelivered('readable')}, output_bytes = EXCLUDED.output_bytes, truncation = EXCLUDED.truncation`,
      );
      return;
    case 'CommandResultUnavailable':
      await upsert(
        { result_state: 'unavailable', output_bytes: e.data.durableBytes, truncation: e.data.truncation ? JSON.stringify(e.data.truncation) : null },
        `result_state = ${notDelivered('unavailable')}, output_bytes = EXCLUDED.output_bytes, truncation = EXCLUDED.truncation`,
      );
      return;
    case 'CommandResultDelivered':
      await upsert({ result_state: 'delivered', delivered_to: e.data.deliveredTo }, `result_state = 'delivered', delivered_to = EXCLUDED.delivered_to`);
      return;
    default:
      assertNever(e, 'sandbox command event');
  }
}

/** `commands`: one row per command (one attempt of a task): exit, result state, output size. */
export function commandsProjection(t: Topology): Projection {
  return {
    name: COMMANDS_PROJECTION,
    stream: t.streams.TASKS,
    filterSubject: t.all.cmd,
    tables: ['commands'],
    apply: (c, m) => applyCommand(c, m.seq, decodeSandboxCommandEvent(m.data)),
  };
}

function offsetOf(value: string | undefined): number {
  const n = Number(value);
  if (value === undefined || !Number.isSafeInteger(n) || n < 0) throw new MalformedEvent(`LOGS message without a valid Hp-Offset (${JSON.stringify(value)})`);
  return n;
}

/**
 * `command_log_index`: where each chunk of a command's output (its offset, size and stream), its
 * truncation marker and its exit record sit in LOGS, by stream sequence.
 */
export function commandLogIndexProjection(t: Topology): Projection {
  return {
    name: COMMAND_LOG_INDEX_PROJECTION,
    stream: t.streams.LOGS,
    tables: ['command_log_index'],
    async apply(c, m) {
      const commandId = m.subject.slice(m.subject.lastIndexOf('.') + 1);
      const header = (k: string) => m.header?.(k);
      let kind: string;
      let bytes = m.data.length;
      if (header('Hp-Exit')) {
        kind = 'exit';
      } else if (header('Hp-Truncated')) {
        kind = 'truncated';
        bytes = Number((JSON.parse(header('Hp-Truncated')!) as { droppedBytes?: unknown }).droppedBytes) || 0;
      } else {
        kind = header('Hp-Stream') === 'stderr' ? 'stderr' : 'stdout';
      }
      await c.query(`INSERT INTO command_log_index (command_id, kind, "offset", bytes, logs_seq) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, [
        commandId,
        kind,
        offsetOf(header('Hp-Offset')),
        bytes,
        m.seq,
      ]);
    },
  };
}
