import { createHash } from 'node:crypto';
import { compileOutputPattern, CONDITION_LIMITS, conditionRefusal, scanLines, type ScanCarry, type ValidateTaskWaitRequest } from '@handplane/contracts';
import { isTerminalStatus, type TaskConditionMet, type TaskStatus, type WaitUntil } from '@handplane/domain';
import { ValidationError } from '@handplane/kernel';
import { inTransaction } from '@handplane/platform';
import type { PoolClient } from 'pg';
import type { CoordinatorDeps } from './deps';
import type { WaitCheck } from './validate-task-wait';

type Deps = Pick<CoordinatorDeps, 't' | 'store' | 'tasks' | 'pool' | 'clock' | 'logger' | 'registry' | 'runners'>;

/** The condition id: one per (conversation, run, task), so a repeated declaration registers nothing new. */
export const conditionIdFor = (conversationId: string, runId: string, taskId: string) =>
  `cond-${createHash('sha256').update([conversationId, runId, taskId].join('\0')).digest('hex').slice(0, 32)}`;

/**
 * The per-task answers of `validate-task-wait` with the conditions checked too: a condition on a
 * task the wait does not name, or one refused as given (bad pattern, unsupported probe), makes that
 * task's answer invalid with the reason (G5: the whole call is then rejected).
 */
export function checkConditions(req: ValidateTaskWaitRequest, results: WaitCheck[]): WaitCheck[] {
  const out = results.map((r) => ({ ...r }));
  for (const c of req.conditions ?? []) {
    const r = out.find((x) => x.taskId === c.taskId);
    const why = !r ? 'a condition must name a task of wait_for_tasks' : !req.runId && c.until !== 'exit' ? 'a condition wait needs the run that declares it' : conditionRefusal(c.until);
    if (!why) continue;
    if (r) Object.assign(r, { valid: false, reason: r.valid ? why : `${r.reason}; ${why}` });
    else out.push({ taskId: c.taskId, valid: false, reason: why });
  }
  return out;
}

/** Registers the conditions of a validated wait (`exit` needs none: the completion wakes the agent). */
export async function registerConditions(d: Pick<Deps, 'pool' | 'tasks' | 'clock'>, req: ValidateTaskWaitRequest): Promise<void> {
  if (!req.runId) return;
  const now = d.clock.now().getTime();
  for (const c of req.conditions ?? []) {
    if (c.until === 'exit') continue;
    const { state } = await d.tasks.load(c.taskId);
    if (state.status === 'none') continue;
    const timeoutAt = new Date(now + (c.timeoutMs ?? CONDITION_LIMITS.defaultTimeoutMs));
    await d.pool.query(
      `INSERT INTO task_wait_conditions (condition_id, conversation_id, task_id, run_id, user_id, until, timeout_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (condition_id) DO NOTHING`,
      [conditionIdFor(req.conversationId, req.runId, c.taskId), req.conversationId, c.taskId, req.runId, state.task.userId, JSON.stringify(c.until), timeoutAt],
    );
  }
}

interface ConditionRow {
  condition_id: string;
  conversation_id: string;
  task_id: string;
  run_id: string;
  user_id: string;
  until: WaitUntil;
  timeout_at: Date;
  status: string;
  scan_command_id: string | null;
  scan_offset: string;
  scan_line_offset: string;
  scan_carry: Buffer;
  outcome: Outcome | null;
}

interface Outcome {
  readonly outcome: 'matched' | 'timed_out';
  readonly commandId: string;
  readonly attempt: number;
  readonly line?: string;
  readonly offset?: number;
  readonly detail: string;
}

/** Chunks read per condition and sweep: a busy task is scanned over several sweeps. */
const CHUNKS_PER_SWEEP = 64;

interface TaskRow {
  status: TaskStatus;
  command_id: string;
  attempt: number;
  runner_id: string | null;
}

type Resolve = (status: string, outcome: Outcome | null) => Promise<unknown>;

const describeUntil = (u: { portOpen: number } | { fileExists: string }) => ('portOpen' in u ? `port ${u.portOpen} to open` : `${u.fileExists} to exist`);

/**
 * `portOpen` / `fileExists`: asks the task's runner to probe its sandbox (Probe RPC). A runner that
 * cannot answer leaves the condition pending (the next sweep asks again; the timeout bounds it); one
 * that refuses the path (it leads out of the workspace) resolves it as timed out with the reason, once.
 */
async function probeCondition(d: Deps, row: ConditionRow, task: TaskRow, until: { portOpen: number } | { fileExists: string }, resolve: Resolve): Promise<boolean> {
  if (isTerminalStatus(task.status)) {
    await resolve('task_finished', null);
    return true;
  }
  const ids = { commandId: task.command_id, attempt: task.attempt };
  const timedOut = async (why: string) => {
    await resolve('timed_out', { outcome: 'timed_out', ...ids, detail: why });
    return true;
  };
  if (task.status === 'running' && task.runner_id && d.runners.probe) {
    const runner = await d.registry.get(task.runner_id).catch(() => null);
    if (runner) {
      try {
        const r = await d.runners.probe(runner.address, task.command_id, 'portOpen' in until ? { port: until.portOpen } : { path: until.fileExists });
        if (r.satisfied) {
          await resolve('met', { outcome: 'matched', ...ids, detail: r.detail });
          return true;
        }
      } catch (e) {
        if (e instanceof ValidationError) return timedOut(`the runner refused the probe: ${e.message}`);
        d.logger.warn({ err: e, conditionId: row.condition_id }, 'probe failed; the next sweep asks again');
      }
    }
  }
  if (d.clock.now().getTime() >= row.timeout_at.getTime()) return timedOut(`waited for ${describeUntil(until)} until the wait's timeout; the task is still ${task.status}`);
  return false;
}

/** Decides one pending condition under its row lock; answers whether it resolved. */
async function advance(d: Deps, c: PoolClient, row: ConditionRow): Promise<boolean> {
  const task = (await c.query<TaskRow>('SELECT status, command_id, attempt, runner_id FROM tasks WHERE task_id = $1', [row.task_id])).rows[0];
  if (!task) return false;
  const resolve = (status: string, outcome: Outcome | null) =>
    c.query(`UPDATE task_wait_conditions SET status = $2, outcome = $3, resolved_at = $4 WHERE condition_id = $1`, [row.condition_id, status, outcome && JSON.stringify(outcome), d.clock.now()]);
  const until = row.until;
  if (until !== 'exit' && !('outputMatches' in until)) return probeCondition(d, row, task, until, resolve);
  if (until === 'exit') {
    // Registered by an older or newer version: nothing this one can check. Never wakes twice.
    await resolve('task_finished', null);
    return true;
  }
  const compiled = compileOutputPattern(until.outputMatches);
  if (!compiled.ok) {
    await resolve('task_finished', null);
    return true;
  }
  // A retry runs as a new command: its output is scanned from its start.
  const fresh = row.scan_command_id !== task.command_id;
  let carry: ScanCarry = fresh
    ? { bytes: new Uint8Array(0), lineOffset: 0, nextOffset: 0 }
    : { bytes: new Uint8Array(row.scan_carry), lineOffset: Number(row.scan_line_offset), nextOffset: Number(row.scan_offset) };
  const chunks = await c.query<{ offset: string; data: Buffer }>(
    `SELECT "offset", data FROM command_log WHERE command_id = $1 AND "offset" + octet_length(data) > $2 ORDER BY "offset" LIMIT ${CHUNKS_PER_SWEEP + 1}`,
    [task.command_id, carry.nextOffset],
  );
  const more = chunks.rows.length > CHUNKS_PER_SWEEP;
  const rows = chunks.rows.slice(0, CHUNKS_PER_SWEEP);
  const terminal = isTerminalStatus(task.status);
  for (const [k, ch] of rows.entries()) {
    const at = Number(ch.offset);
    // A range the output cap dropped breaks the line in two.
    if (at > carry.nextOffset) carry = { bytes: new Uint8Array(0), lineOffset: at, nextOffset: at };
    const data = at < carry.nextOffset ? ch.data.subarray(carry.nextOffset - at) : ch.data;
    const final = terminal && !more && k === rows.length - 1;
    const r = scanLines(compiled.regex, data, carry, final);
    carry = r.carry;
    if (r.match) {
      await resolve('met', { outcome: 'matched', commandId: task.command_id, attempt: task.attempt, line: r.match.line, offset: r.match.offset, detail: `a line of its output matched ${JSON.stringify(until.outputMatches)}` });
      return true;
    }
  }
  if (terminal && !more) {
    // It ended without a match: its completion wakes the agent (with its receipt), once.
    await resolve('task_finished', null);
    return true;
  }
  if (d.clock.now().getTime() >= row.timeout_at.getTime()) {
    await resolve('timed_out', { outcome: 'timed_out', commandId: task.command_id, attempt: task.attempt, detail: `no line of its output matched ${JSON.stringify(until.outputMatches)} before the wait's timeout; the task is still ${task.status}` });
    return true;
  }
  await c.query(`UPDATE task_wait_conditions SET scan_command_id = $2, scan_offset = $3, scan_line_offset = $4, scan_carry = $5 WHERE condition_id = $1`, [
    row.condition_id,
    task.command_id,
    carry.nextOffset,
    carry.lineOffset,
    Buffer.from(carry.bytes),
  ]);
  return false;
}

/** The wake-up a resolved condition publishes (exactly one per condition). */
export function conditionEvent(row: ConditionRow, o: Outcome, at: string): TaskConditionMet {
  return {
    type: 'task.condition_met',
    data: {
      conditionId: row.condition_id,
      taskId: row.task_id,
      commandId: o.commandId,
      attempt: o.attempt,
      userId: row.user_id,
      runId: row.run_id,
      until: row.until,
      outcome: o.outcome,
      ...(o.line !== undefined ? { line: o.line } : {}),
      ...(o.offset !== undefined ? { offset: o.offset } : {}),
      detail: o.detail,
    },
    metadata: { at, actor: row.user_id },
  };
}

/**
 * The condition watcher (issue 10.1): checks pending condition waits against the durable Command
 * Log and publishes one `task.condition_met` per resolved condition. The row's status is the
 * decision (taken under its row lock, SKIP LOCKED, so coordinators never decide one twice);
 * `published_at` and the message id `condition:<id>` make the publication happen once.
 */
export class ConditionWatcher {
  constructor(private readonly d: Deps) {}

  /** One sweep: decides what it can, then publishes what is resolved and not yet published. */
  async sweep(limit = 100): Promise<number> {
    await inTransaction(this.d.pool, async (c) => {
      const rows = await c.query<ConditionRow>(`SELECT * FROM task_wait_conditions WHERE status = 'pending' ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`, [limit]);
      for (const row of rows.rows) await advance(this.d, c, row);
    });
    return this.publish(limit);
  }

  private publish(limit: number): Promise<number> {
    return inTransaction(this.d.pool, async (c) => {
      const rows = await c.query<ConditionRow & { resolved_at: Date }>(
        `SELECT * FROM task_wait_conditions WHERE status IN ('met', 'timed_out') AND published_at IS NULL ORDER BY resolved_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      let done = 0;
      for (const row of rows.rows) {
        try {
          await this.d.store.publish(this.d.t.conv(row.conversation_id), conditionEvent(row, row.outcome!, row.resolved_at.toISOString()), `condition:${row.condition_id}`);
        } catch (e) {
          this.d.logger.warn({ err: e, conditionId: row.condition_id }, 'condition wake-up not published yet; the next sweep retries');
          break;
        }
        await c.query('UPDATE task_wait_conditions SET published_at = $2 WHERE condition_id = $1', [row.condition_id, this.d.clock.now()]);
        done++;
      }
      return done;
    });
  }
}
