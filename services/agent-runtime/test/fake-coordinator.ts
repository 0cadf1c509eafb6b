import { createHash } from 'node:crypto';
import type { Pool } from 'pg';
import type { Subscription } from '@nats-io/transport-node';
import { Conflict } from '@handplane/kernel';
import { decodeTaskEvent, startTaskRequestSchema, stopTaskRequestSchema, validateTaskWaitRequestSchema, type StartTaskRequest, type StopTaskRequest, type Topology } from '@handplane/contracts';
import type { InternalTaskEvent, TaskEvent } from '@handplane/domain';
import { createLogger, EventStore, serveRpc, type Nats } from '@handplane/platform';

/** How the fake host treats a command: finish in the window, or go to the background (after `gate`). */
export type Behaviour = { kind: 'finish'; exitCode: number; output: Buffer | string } | { kind: 'background'; gate?: Promise<void> };

interface FakeTask {
  readonly req: StartTaskRequest;
  readonly taskId: string;
  readonly commandId: string;
  lastSeq: number;
  finished: boolean;
  /** Unfinished tasks of the same conversation when this one was requested (for G3 checks). */
  readonly runningAtStart: readonly string[];
}

const at = () => new Date().toISOString();

/**
 * Plays the task coordinator (and the ingestor's Command Log) with the real NATS and Postgres:
 * serves `start-task` and `validate-task-wait`, appends task events with the EventStore, stores
 * output in `command_log` and publishes `task.internal_event` when a task finishes.
 */
export class FakeCoordinator {
  readonly tasks = new Map<string, FakeTask>();
  /** Every start-task request id received, repeats included (a redone call shows up twice). */
  readonly requests: string[] = [];
  /** Every stop-task request received. */
  readonly stops: StopTaskRequest[] = [];
  private readonly subs: Subscription[] = [];
  private readonly store: EventStore;
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly nats: Nats,
    private readonly t: Topology,
    private readonly pool: Pool,
    private readonly behaviour: (command: string) => Behaviour,
  ) {
    this.store = new EventStore(nats);
  }

  start(): void {
    const logger = createLogger('fake-coordinator', 'warn');
    this.subs.push(serveRpc(this.nats.nc, this.t.rpc.startTask, 'coordinator', startTaskRequestSchema, (req) => this.startTask(req), logger));
    this.subs.push(serveRpc(this.nats.nc, this.t.rpc.validateTaskWait, 'coordinator', validateTaskWaitRequestSchema, (req) => this.validate(req.conversationId, req.taskIds), logger));
    this.subs.push(
      serveRpc(this.nats.nc, this.t.rpc.stopTask, 'coordinator', stopTaskRequestSchema, async (req) => {
        this.stops.push(req);
        const task = this.tasks.get(req.taskId);
        if (!task || task.req.tenant !== req.tenant) return { ok: false, error: { code: 'not_found', message: `task ${req.taskId} not found` } };
        return { ok: true, status: task.finished ? 'succeeded' : 'stopping', attempt: 1 };
      }, logger),
    );
  }

  /** Resolves when every task the fake is driving has reached its last scripted event. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.allSettled([...this.pending]);
  }

  async stop(): Promise<void> {
    for (const s of this.subs) s.unsubscribe();
    await this.idle();
  }

  /** The task started for a command (by its text). */
  taskOf(command: string): FakeTask | undefined {
    return [...this.tasks.values()].find((x) => x.req.input.command === command);
  }

  /** Finishes a task: output into the Command Log, TaskFinished, then its internal event. */
  async finish(taskId: string, exitCode: number, output: Buffer | string, internalMsgId = `notify:${taskId}:1`): Promise<void> {
    const task = this.tasks.get(taskId)!;
    const bytes = Buffer.from(output);
    if (bytes.length) await this.pool.query(`INSERT INTO command_log (command_id, "offset", stream, data) VALUES ($1, 0, 1, $2) ON CONFLICT DO NOTHING`, [task.commandId, bytes]);
    const status = exitCode === 0 ? 'succeeded' : 'failed';
    await this.append(task, { type: 'TaskFinished', data: { taskId, commandId: task.commandId, attempt: 1, status, exitCode, signal: null, resultState: 'readable', outputBytes: bytes.length, finishedAt: at() }, metadata: { at: at() } });
    task.finished = true;
    await this.publishInternal(taskId, internalMsgId, { status, exitCode, outputBytes: bytes.length });
  }

  /** Publishes a task's internal event (again, with another msg id, to play a duplicate). */
  async publishInternal(taskId: string, msgId: string, r?: { status: string; exitCode: number; outputBytes: number }): Promise<number> {
    const task = this.tasks.get(taskId)!;
    const last = r ?? (await this.store.read(this.t.streams.TASKS, this.t.task(taskId), decodeTaskEvent)).events.map((e) => e.event).find((e) => e.type === 'TaskFinished')!.data;
    const event: InternalTaskEvent = {
      type: 'task.internal_event',
      data: { taskId, commandId: task.commandId, attempt: 1, userId: task.req.userId, origin: task.req.origin, ...(task.req.runId ? { runId: task.req.runId } : {}), status: last.status, exitCode: last.exitCode, signal: null, resultState: 'readable', outputBytes: last.outputBytes },
      metadata: { at: at(), actor: 'system:task-coordinator' },
    };
    return (await this.store.publish(this.t.conv(task.req.conversationId), event, msgId)).seq;
  }

  private async startTask(req: StartTaskRequest) {
    this.requests.push(req.requestId);
    const h = createHash('sha256').update(`${req.tenant}:${req.requestId}`).digest('hex');
    const taskId = `t${h.slice(0, 16)}`;
    const existing = this.tasks.get(taskId);
    if (existing) return { ok: true, taskId, commandId: existing.commandId, seq: 1 };
    const runningAtStart = [...this.tasks.values()].filter((x) => x.req.conversationId === req.conversationId && !x.finished).map((x) => x.taskId);
    const task: FakeTask = { req, taskId, commandId: `c${h.slice(16, 32)}`, lastSeq: 0, finished: false, runningAtStart };
    this.tasks.set(taskId, task);
    const d = req.input;
    await this.append(task, {
      type: 'TaskRegistered',
      data: { taskId, commandId: task.commandId, conversationId: req.conversationId, tenant: req.tenant, userId: req.userId, origin: req.origin, ...(req.runId ? { runId: req.runId } : {}), command: d.command, cwd: d.cwd ?? '', env: d.env ?? {}, epoch: req.epoch, attempt: 1, foregroundWindowMs: 2000, timeoutMs: 3_600_000, registeredAt: at() },
      metadata: { at: at(), actor: req.userId },
    });
    const p = this.run(task).catch((e) => console.error('fake coordinator failed', e));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
    return { ok: true, taskId, commandId: task.commandId, seq: task.lastSeq };
  }

  private async run(task: FakeTask): Promise<void> {
    const b = this.behaviour(task.req.input.command);
    await this.append(task, { type: 'TaskStarted', data: { taskId: task.taskId, commandId: task.commandId, attempt: 1, runnerId: 'fake', startedAt: at() }, metadata: { at: at() } });
    if (b.kind === 'finish') return this.finish(task.taskId, b.exitCode, b.output);
    await b.gate;
    await this.append(task, { type: 'TaskBackgrounded', data: { taskId: task.taskId, commandId: task.commandId, attempt: 1, backgroundedAt: at() }, metadata: { at: at() } });
  }

  private async validate(conversationId: string, taskIds: string[]) {
    const results = taskIds.map((taskId) => {
      const task = this.tasks.get(taskId);
      if (!task) return { taskId, valid: false, reason: 'unknown task' };
      if (task.req.conversationId !== conversationId) return { taskId, valid: false, reason: 'not a task of this conversation' };
      if (task.finished) return { taskId, valid: false, reason: 'already finished', status: 'succeeded' };
      return { taskId, valid: true, status: 'running' };
    });
    return { ok: true, valid: results.every((r) => r.valid), results };
  }

  private async append(task: FakeTask, event: TaskEvent): Promise<void> {
    try {
      task.lastSeq = await this.store.append(this.t.task(task.taskId), [event], { expectedLastSeq: task.lastSeq, msgId: `${task.taskId}:${event.type}` });
    } catch (e) {
      if (!(e instanceof Conflict)) throw e;
      throw new Error(`fake coordinator lost its own sequence on ${task.taskId}`);
    }
  }
}
