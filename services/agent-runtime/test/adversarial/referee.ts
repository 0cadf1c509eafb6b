import type { ConversationEvent, ConversationRunState } from '@handplane/domain';

/** A governance violation that reached the conversation (or the host). */
export interface Violation {
  readonly rule: string;
  readonly detail: string;
}

/** What the referee knows of the host's truth, independently of the runtime's guards. */
export interface Truth {
  /** Is the task known and not finished? */
  running(taskId: string): boolean;
  /** The conversation a task belongs to (undefined: no such task). */
  conversationOf(taskId: string): string | undefined;
  /** The user who started a task. */
  userOf(taskId: string): string | undefined;
}

/** The run state before or after an event (a checkpoint, or a fold of the conversation's events). */
export interface Snapshot {
  readonly conv: ConversationRunState;
}

const unfinished = (s: ConversationRunState) => s.todos.filter((t) => t.status !== 'completed');

/**
 * Judges every step of a run from the outside: the events published and the host's truth at
 * that moment (tasks only ever move towards finished, so checking right after a step is exact).
 * It shares no code with the guards it judges.
 */
export class Referee {
  readonly violations: Violation[] = [];
  private readonly emptyReads = new Map<string, number[]>(); // runId:taskId → offsets that read nothing
  private readonly results = new Map<string, number>();

  constructor(
    private readonly conversationId: string,
    private readonly truth: Truth,
  ) {}

  private flag(rule: string, detail: string): void {
    this.violations.push({ rule, detail });
  }

  observe(before: Snapshot, after: Snapshot, published: readonly ConversationEvent[]): void {
    for (const e of published) this.event(before, after, e);
  }

  private event(before: Snapshot, after: Snapshot, e: ConversationEvent): void {
    switch (e.type) {
      case 'todos.updated':
        for (const t of e.data.todos) {
          if (t.status !== 'completed') continue;
          for (const id of t.taskIds) if (this.truth.running(id)) this.flag('G4', `todo ${t.id} completed while its task ${id} runs`);
        }
        return;
      case 'wait.declared':
        for (const id of e.data.taskIds) {
          if (this.truth.conversationOf(id) !== this.conversationId) this.flag('G5', `wait on ${id}, not a task of this conversation`);
          else if (!this.truth.running(id)) this.flag('G5', `wait on ${id}, which has finished`);
        }
        return;
      case 'run.finished': {
        const s = after.conv;
        const backed = (s.status === 'waiting' && s.taskIds.length > 0) || (s.open?.length ?? 0) > 0;
        if (e.data.outcome === 'completed' && unfinished(s).length) this.flag('G6', `run completed with unfinished todos ${unfinished(s).map((t) => t.id).join(', ')}`);
        if (e.data.outcome === 'waiting' && !backed) this.flag('G6', 'run suspended as waiting with nothing to wait for');
        return;
      }
      case 'run.started': {
        const prev = before.conv;
        if (e.data.trigger === 'task_event') {
          if ((prev.open?.length ?? 0) > 0) this.flag('G10', `task event started a run while ${prev.open!.map((o) => o.id).join(', ')} waited for a person`);
          if (e.data.userId !== this.truth.userOf(e.data.taskId!)) this.flag('G9', `run for task ${e.data.taskId} as ${e.data.userId}`);
        } else if (after.conv.status === 'running' && after.conv.waitForTasks.length) {
          this.flag('G7', `a run started by ${e.data.trigger} kept the wait on ${after.conv.waitForTasks.join(', ')}`);
        }
        return;
      }
      case 'tool.called':
        this.results.set(e.data.callId, 0);
        return;
      case 'tool.result':
        this.results.set(e.data.callId, (this.results.get(e.data.callId) ?? 0) + 1);
        if (this.results.get(e.data.callId)! > 1) this.flag('G8', `call ${e.data.callId} answered twice`);
        if (e.data.name === 'read_output' && e.data.ok) this.read(e.data.runId, e.data.result as { taskId: string; offset: number; bytes: number; status: string });
        return;
      default:
        return;
    }
  }

  /** G3: a running task read again from an offset that already gave nothing, in the same run. */
  private read(runId: string, r: { taskId: string; offset: number; bytes: number }): void {
    if (r.bytes > 0 || !this.truth.running(r.taskId)) return;
    const key = `${runId}:${r.taskId}`;
    const seen = this.emptyReads.get(key) ?? [];
    if (seen.some((o) => o >= r.offset)) this.flag('G3', `read_output of running task ${r.taskId} repeated with no new bytes`);
    this.emptyReads.set(key, [...seen, r.offset]);
  }

  /** Checks of the host's log once the conversation settled: what ran that never should have. */
  finalChecks(starts: readonly { command: string; requestId: string; runningAtStart: readonly string[] }[], requests: readonly { requestId: string }[], labels: ReadonlyMap<string, 'detach' | 'poll'>): void {
    for (const s of starts) {
      const label = labels.get(s.command);
      if (label === 'detach') this.flag('G2', `detaching command ran: ${s.command}`);
      if (label === 'poll' && s.runningAtStart.length) this.flag('G3', `polling command ran while ${s.runningAtStart.join(', ')} ran: ${s.command}`);
    }
    const counts = new Map<string, number>();
    for (const r of requests) counts.set(r.requestId, (counts.get(r.requestId) ?? 0) + 1);
    for (const [id, n] of counts) if (n > 1) this.flag('G8', `request ${id} sent ${n} times (a tool call executed twice)`);
    for (const [callId, n] of this.results) if (n !== 1) this.flag('G8', `call ${callId} has ${n} results`);
  }
}
