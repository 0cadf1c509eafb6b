import type { StartTaskRequest } from '@handplane/contracts';
import { isTerminalTaskStatus, type InternalTaskEvent, type TaskStatus } from '@handplane/domain';
import type { HostPort } from '../../src/app/tools/host';
import type { TaskView } from '../../src/app/tools/task-view';

/** What the simulated coordinator does with a command. */
export type SimBehaviour = { kind: 'finish'; exitCode: number; output: string } | { kind: 'background' };

export interface SimTask {
  readonly view: TaskView;
  readonly command: string;
  readonly requestId: string;
  output: Buffer;
  /** Tasks of the conversation that were running when this one started (for the G3 referee). */
  readonly runningAtStart: readonly string[];
}

/**
 * The coordinator, the task log, the Command Log and the wake-up table in memory, with the same
 * semantics the runtime relies on: start-task idempotent on the request id, validate_task_wait,
 * completions queued once per (task, attempt) unless the run already read the result.
 */
export class SimHost implements HostPort {
  readonly tasks = new Map<string, SimTask>();
  readonly byRequest = new Map<string, string>();
  /** Every start-task request, duplicates included (a redone call would show here). */
  readonly requests: StartTaskRequest[] = [];
  /** Completions: key `task:attempt` → the internal event and whether a run consumed it. */
  readonly wakeups = new Map<string, { event: InternalTaskEvent['data']; consumed: boolean; conversationId: string }>();
  private n = 0;

  constructor(
    private readonly behaviour: (command: string) => SimBehaviour,
    private readonly conversations: ReadonlyMap<string, { tenant: string; epoch: number }>,
  ) {}

  async conversation(id: string) {
    return this.conversations.get(id);
  }

  async startTask(req: StartTaskRequest) {
    this.requests.push(req);
    const existing = this.byRequest.get(req.requestId);
    if (existing) return { ok: true as const, taskId: existing, commandId: this.tasks.get(existing)!.view.commandId, seq: 1 };
    const k = ++this.n;
    const taskId = `t${k}`;
    const runningAtStart = this.unfinished(req.conversationId);
    const b = this.behaviour(req.input.command);
    const view: TaskView = { taskId, commandId: `c${k}`, conversationId: req.conversationId, userId: req.userId, attempt: 1, status: 'running', background: false, exitCode: null, signal: null, resultState: 'result_pending', outputBytes: 0, receipt: null };
    this.tasks.set(taskId, { view, command: req.input.command, requestId: req.requestId, output: Buffer.alloc(0), runningAtStart });
    this.byRequest.set(req.requestId, taskId);
    if (b.kind === 'finish') this.finish(taskId, b.exitCode, b.output);
    else this.update(taskId, { background: true });
    return { ok: true as const, taskId, commandId: view.commandId, seq: 1 };
  }

  /** Adds a task of some conversation directly (a foreign conversation's task, for G5 attempts). */
  addTask(conversationId: string, command: string, status: TaskStatus, taskId = `t${++this.n}`): string {
    const k = this.n;
    const view: TaskView = { taskId, commandId: `c${k}`, conversationId, userId: 'mallory', attempt: 1, status, background: true, exitCode: isTerminalTaskStatus(status) ? 0 : null, signal: null, resultState: 'readable', outputBytes: 0, receipt: null };
    this.tasks.set(taskId, { view, command, requestId: `direct-${k}`, output: Buffer.alloc(0), runningAtStart: [] });
    return taskId;
  }

  private update(taskId: string, patch: Partial<TaskView>): void {
    const t = this.tasks.get(taskId)!;
    this.tasks.set(taskId, { ...t, view: { ...t.view, ...patch } });
  }

  /** Finishes a task: output, terminal status, and its completion queued (once). */
  finish(taskId: string, exitCode: number, output: string): void {
    const t = this.tasks.get(taskId)!;
    if (isTerminalTaskStatus(t.view.status)) return;
    t.output = Buffer.from(output);
    const status = exitCode === 0 ? 'succeeded' : 'failed';
    this.update(taskId, { status, exitCode, resultState: 'readable', outputBytes: t.output.length });
    const key = `${taskId}:1`;
    const v = this.tasks.get(taskId)!.view;
    const event: InternalTaskEvent['data'] = { taskId, commandId: v.commandId, attempt: 1, userId: v.userId, origin: 'agent', status, exitCode, signal: null, resultState: 'readable', outputBytes: t.output.length };
    const w = this.wakeups.get(key);
    this.wakeups.set(key, { event, consumed: w?.consumed ?? false, conversationId: v.conversationId });
  }

  async validateWait(conversationId: string, taskIds: readonly string[]) {
    const results = taskIds.map((taskId) => {
      const t = this.tasks.get(taskId);
      if (!t) return { taskId, valid: false, reason: 'unknown task' };
      if (t.view.conversationId !== conversationId) return { taskId, valid: false, reason: 'not a task of this conversation' };
      if (isTerminalTaskStatus(t.view.status)) return { taskId, valid: false, reason: `already finished (${t.view.status})`, status: t.view.status };
      return { taskId, valid: true, status: t.view.status };
    });
    return { ok: true as const, valid: results.every((r) => r.valid), results };
  }

  async stopTask(req: { taskId: string }) {
    const t = this.tasks.get(req.taskId);
    if (!t) return { ok: false as const, error: { code: 'not_found', message: 'no such task' } };
    this.finish(req.taskId, 143, '');
    return { ok: true as const, status: this.tasks.get(req.taskId)!.view.status as 'failed', attempt: 1 };
  }

  async writeStdin(req: { taskId: string }) {
    // The simulated tasks read no input; the adversary never needs it.
    return { ok: false as const, error: { code: 'illegal_state', message: `task ${req.taskId} takes no input in the simulation` } };
  }

  async taskStatus(taskId: string) {
    return this.tasks.get(taskId)?.view.status ?? 'unknown';
  }

  async readTask(taskId: string) {
    return this.tasks.get(taskId)?.view;
  }

  async watchTask(taskId: string, done: (v: TaskView) => boolean) {
    const v = this.tasks.get(taskId)?.view;
    return v && done(v) ? v : undefined;
  }

  async readLog(commandId: string, offset: number, cap: number) {
    const t = [...this.tasks.values()].find((x) => x.view.commandId === commandId);
    const bytes = (t?.output ?? Buffer.alloc(0)).subarray(offset, offset + cap);
    return { bytes, nextOffset: offset + bytes.length };
  }

  readonly delivered = new Set<string>();

  async markDelivered(commandId: string) {
    this.delivered.add(commandId);
  }

  async markResultRead(r: { conversationId: string; taskId: string; attempt: number }) {
    const key = `${r.taskId}:${r.attempt}`;
    const w = this.wakeups.get(key);
    if (w) w.consumed = true;
    else this.wakeups.set(key, { event: undefined as never, consumed: true, conversationId: r.conversationId });
  }

  async unfinishedTasks(conversationId: string) {
    return this.unfinished(conversationId);
  }

  unfinished(conversationId: string): string[] {
    return [...this.tasks.values()].filter((t) => t.view.conversationId === conversationId && !isTerminalTaskStatus(t.view.status)).map((t) => t.view.taskId);
  }

  isRunning(taskId: string): boolean {
    const t = this.tasks.get(taskId);
    return !!t && !isTerminalTaskStatus(t.view.status);
  }
}
