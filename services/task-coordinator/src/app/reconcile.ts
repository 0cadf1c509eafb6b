import { decodeSandboxCommandEvent } from '@handplane/contracts';
import { sandboxCommandDecider } from '@handplane/domain';
import { IllegalState } from '@handplane/kernel';
import { handleCommand, type RunnerRecord } from '@handplane/platform';
import { SYSTEM_ACTOR, type CoordinatorDeps } from './deps';
import type { RunnerCommand, RunnerListing } from './runner-port';
import { settleFromCommand } from './settle-task';
import { withLock } from './task-lock';

type Deps = Pick<CoordinatorDeps, 't' | 'store' | 'tasks' | 'pool' | 'lockPool' | 'clock' | 'logger' | 'registry' | 'runners' | 'settings'>;

/** What one reconciliation pass did. Running it again right away does nothing new. */
export interface ReconcileReport {
  /** Tasks whose result was recorded but not yet applied: now finished (or retried). */
  settled: string[];
  /** Tasks whose runner is gone (or no longer knows the command): result unavailable, then lost (or retried). */
  lost: string[];
  /** Commands still running for a task that moved on (finished, or a later attempt): killed. */
  killed: string[];
  /** Tasks whose command exited on the runner and whose result the log-ingestor has not recorded yet. */
  awaitingResult: string[];
  /** Tasks still `starting` whose runner already runs their attempt (the Exec answered, TaskStarted was not recorded): now started. */
  adopted: string[];
}

interface OpenTask {
  taskId: string;
  commandId: string;
  attempt: number;
  epoch: number;
  runnerId: string;
  startedAt: Date | null;
}

/**
 * Reconciliation (at start-up and every RECONCILE_INTERVAL_MS): compares the unfinished tasks of the
 * `tasks` read model with what their runners report (List, one call per runner), with every look-up
 * fenced by (commandId, epoch, attempt):
 * - a command that exited while nobody watched, whose result is recorded, settles its task (the
 *   same decider path as the result consumer, so settling twice changes nothing);
 * - a task whose runner is gone past RUNNER_LOST_AFTER_MS (or that its live runner no longer knows)
 *   gets its result marked unavailable (the durable prefix stays readable) and ends `lost`, or is retried;
 * - a command still running for a task that finished, or for an earlier attempt, is killed.
 * One coordinator reconciles at a time (advisory lock); the others skip the pass.
 */
export class Reconciler {
  /** When this instance first saw a runner missing from the registry (monotonic): the registry keeps no tombstone time. */
  private readonly missingSince = new Map<string, number>();

  constructor(private readonly d: Deps) {}

  /** One pass, or undefined when another coordinator is running one. */
  async run(): Promise<ReconcileReport | undefined> {
    return withLock(this.d.lockPool ?? this.d.pool, 'reconcile', () => this.pass());
  }

  private async pass(): Promise<ReconcileReport> {
    const report: ReconcileReport = { settled: [], lost: [], killed: [], awaitingResult: [], adopted: [] };
    const open = await this.openTasks();
    const live = await this.d.registry.live(this.d.clock.now(), this.d.settings.runnerLostAfterMs);
    const runnerIds = new Set([...open.map((t) => t.runnerId), ...live.map((r) => r.runnerId)]);
    for (const runnerId of runnerIds) {
      const tasks = open.filter((t) => t.runnerId === runnerId);
      try {
        await this.reconcileRunner(runnerId, tasks, report);
      } catch (e) {
        this.d.logger.warn({ err: e, runnerId }, 'reconciliation of a runner failed; the next pass retries');
      }
    }
    if (report.settled.length + report.lost.length + report.killed.length + report.adopted.length > 0) this.d.logger.info(report, 'reconciliation changed things');
    return report;
  }

  private async openTasks(): Promise<OpenTask[]> {
    const r = await this.d.pool.query<{ task_id: string; command_id: string; attempt: number; epoch: number; runner_id: string; started_at: Date | null }>(
      `SELECT task_id, command_id, attempt, epoch, runner_id, started_at FROM tasks WHERE status IN ('running', 'stopping') AND runner_id IS NOT NULL`,
    );
    return r.rows.map((x) => ({ taskId: x.task_id, commandId: x.command_id, attempt: x.attempt, epoch: x.epoch, runnerId: x.runner_id, startedAt: x.started_at }));
  }

  /** 'live', 'lost', or 'silent' (not heard from lately, not lost yet). */
  private runnerState(runnerId: string, record: RunnerRecord | null): 'live' | 'lost' | 'silent' {
    const limit = this.d.settings.runnerLostAfterMs;
    if (!record) {
      const since = this.missingSince.get(runnerId) ?? this.d.clock.monotonicMs();
      this.missingSince.set(runnerId, since);
      return this.d.clock.monotonicMs() - since > limit ? 'lost' : 'silent';
    }
    this.missingSince.delete(runnerId);
    return this.d.clock.now().getTime() - Date.parse(record.heartbeatAt) > limit ? 'lost' : 'live';
  }

  private async reconcileRunner(runnerId: string, tasks: OpenTask[], report: ReconcileReport): Promise<void> {
    const record = await this.d.registry.get(runnerId);
    const state = this.runnerState(runnerId, record);
    if (state === 'lost') {
      for (const t of tasks) await this.markLost(t, `runner ${runnerId} lost (no heartbeat for more than ${this.d.settings.runnerLostAfterMs} ms)`, report);
      return;
    }
    if (state === 'silent' || !record) return;
    let listing: RunnerListing;
    try {
      listing = await this.d.runners.list(record.address);
    } catch (e) {
      this.d.logger.warn({ err: e, runnerId }, 'runner did not answer List; the next pass retries');
      return;
    }
    const byId = new Map(listing.commands.map((c) => [c.commandId, c]));
    await this.adopt(record, listing.commands, report);
    for (const t of tasks) await this.compare(t, byId.get(t.commandId), report);
    await this.killOrphans(record, listing.commands.filter((c) => c.state !== 'exited'), report);
  }

  /**
   * A coordinator that died between Exec and TaskStarted leaves the task `starting` until its dispatch
   * message is redelivered (after the consumer's ack wait): record the start now, as that redelivery
   * would (the same runner, so whichever comes second changes nothing).
   */
  private async adopt(runner: RunnerRecord, commands: readonly RunnerCommand[], report: ReconcileReport): Promise<void> {
    if (commands.length === 0) return;
    const r = await this.d.pool.query<{ task_id: string; command_id: string; attempt: number; epoch: number }>(
      `SELECT task_id, command_id, attempt, epoch FROM tasks WHERE status = 'starting' AND runner_id IS NULL AND command_id = ANY($1)`,
      [commands.map((c) => c.commandId)],
    );
    for (const row of r.rows) {
      const c = commands.find((x) => x.commandId === row.command_id)!;
      if (c.attempt !== row.attempt || c.epoch !== row.epoch) continue;
      try {
        const at = { at: this.d.clock.now().toISOString(), actor: SYSTEM_ACTOR };
        const done = await this.d.tasks.execute(row.task_id, { type: 'StartTask', data: { runnerId: runner.runnerId, attempt: row.attempt }, metadata: at }, `started:${row.task_id}:${row.attempt}:${runner.runnerId}`);
        if (done.events.length) report.adopted.push(row.task_id);
      } catch (e) {
        this.d.logger.warn({ err: e, taskId: row.task_id }, 'could not record the start of a command its runner runs');
      }
    }
  }

  private async compare(t: OpenTask, cmd: RunnerCommand | undefined, report: ReconcileReport): Promise<void> {
    if (!cmd) {
      if (await this.settled(t, report)) return;
      // A live runner that does not know a command it accepted lost it (a new data directory, a spool
      // swept before its result was read): give Exec→TaskStarted its time, then settle it as lost.
      const age = t.startedAt ? this.d.clock.now().getTime() - t.startedAt.getTime() : 0;
      if (age > this.d.settings.runnerLostAfterMs) await this.markLost(t, `runner ${t.runnerId} no longer knows command ${t.commandId}`, report);
      return;
    }
    if (cmd.attempt !== t.attempt || cmd.epoch !== t.epoch) {
      this.d.logger.error({ taskId: t.taskId, commandId: t.commandId, runner: { epoch: cmd.epoch, attempt: cmd.attempt }, task: { epoch: t.epoch, attempt: t.attempt } }, 'runner reports another generation; nothing done');
      return;
    }
    if (cmd.state !== 'exited') return;
    if (!(await this.settled(t, report))) report.awaitingResult.push(t.taskId);
  }

  /** Settles the task from its command's recorded result; false when there is none yet. */
  private async settled(t: OpenTask, report: ReconcileReport): Promise<boolean> {
    const s = await settleFromCommand(this.d, t.commandId, t.attempt);
    if (s.changed) report.settled.push(t.taskId);
    return s.result;
  }

  /** Marks the result unavailable (as the log-ingestor does for a lost runner), then settles the task. */
  private async markLost(t: OpenTask, reason: string, report: ReconcileReport): Promise<void> {
    if (await this.settled(t, report)) return;
    const cursor = await this.d.pool.query<{ committed_offset: string }>('SELECT committed_offset FROM ingest_cursors WHERE command_id = $1', [t.commandId]);
    const durableBytes = cursor.rowCount ? Number(cursor.rows[0]!.committed_offset) : 0;
    let marked: { events: unknown[] };
    try {
      marked = await handleCommand({
        store: this.d.store,
        stream: this.d.t.streams.TASKS,
        subject: this.d.t.cmd(t.commandId),
        decode: decodeSandboxCommandEvent,
        decider: sandboxCommandDecider,
        command: { type: 'MarkUnavailable', data: { commandId: t.commandId, taskId: t.taskId, attempt: t.attempt, durableBytes, reason }, metadata: { at: this.d.clock.now().toISOString(), actor: SYSTEM_ACTOR } },
        msgId: () => `${t.commandId}:unavailable`,
      });
    } catch (e) {
      // Every byte is durable after all (or the result settled meanwhile): the ingestor makes it readable.
      if (e instanceof IllegalState) return;
      throw e;
    }
    if (marked.events.length > 0) report.lost.push(t.taskId);
    // Settle now rather than wait for the result consumer (whichever comes first decides; the other changes nothing).
    await settleFromCommand(this.d, t.commandId, t.attempt);
  }

  private async killOrphans(runner: RunnerRecord, running: RunnerCommand[], report: ReconcileReport): Promise<void> {
    if (running.length === 0) return;
    const r = await this.d.pool.query<{ task_id: string; command_id: string; attempt: number; status: string }>(
      'SELECT task_id, command_id, attempt, status FROM tasks WHERE task_id = ANY($1)',
      [running.map((c) => c.taskId)],
    );
    const rows = new Map(r.rows.map((x) => [x.task_id, x]));
    for (const c of running) {
      const row = rows.get(c.taskId);
      // Unknown to the read model (not ours, or not projected yet): leave it alone.
      if (!row) continue;
      const finished = row.command_id === c.commandId && !['starting', 'running', 'stopping'].includes(row.status);
      const superseded = row.attempt > c.attempt;
      if (!finished && !superseded) continue;
      try {
        await this.d.runners.signal(runner.address, { commandId: c.commandId, taskId: c.taskId, epoch: c.epoch, attempt: c.attempt, kind: 'kill', graceMs: 0, reason: 'orphan' });
        report.killed.push(c.commandId);
        this.d.logger.warn({ taskId: c.taskId, commandId: c.commandId, runnerId: runner.runnerId, taskStatus: row.status }, 'killed a command whose task moved on');
      } catch (e) {
        this.d.logger.warn({ err: e, commandId: c.commandId }, 'orphan not killed; the next pass retries');
      }
    }
  }
}
