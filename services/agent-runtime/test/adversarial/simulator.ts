import type { ConversationEvent } from '@handplane/domain';
import { admitsWakeups } from '@handplane/domain';
import { createLogger } from '@handplane/platform';
import { AUTOMATIC, type ApprovalPolicy } from '../../src/app/approval/approval-policy';
import type { ModelProvider } from '../../src/app/model/transcript';
import { emptyCheckpoint, type Checkpoint } from '../../src/app/run/checkpoint';
import { advance } from '../../src/app/run/engine';
import type { WorkItem } from '../../src/app/run/queue';
import { isStale, startRun, steer } from '../../src/app/run/run-steps';
import { createTools } from '../../src/app/tools/tools';
import type { Tool } from '../../src/app/tools/tool';
import type { SimHost } from './sim-host';

/** Sees every step: the checkpoint before and after it and the events it published. */
export type StepObserver = (before: Checkpoint, after: Checkpoint, published: readonly ConversationEvent[]) => void;

const logger = createLogger('adversarial', 'silent');

/**
 * One conversation driven in memory by the runtime's own pure parts: `advance` (model → tools →
 * checkpoint), `startRun`, `steer`, the real tools and guards against a simulated host. What the
 * Postgres queue does (human input first, completions once each, held back while a question or
 * approval is open) is played here with the same rules (`admitsWakeups`, `isStale`).
 */
export class Simulation {
  cp: Checkpoint = emptyCheckpoint();
  readonly events: ConversationEvent[] = [];
  private readonly published = new Set<string>();
  private readonly inbox: (WorkItem & { consumed?: boolean })[] = [];
  private seq = 0;
  private runs = 0;
  private clock = Date.parse('2026-01-01T00:00:00.000Z');
  private readonly tools: Readonly<Record<string, Tool>>;

  constructor(
    readonly conversationId: string,
    readonly host: SimHost,
    private readonly model: ModelProvider,
    private readonly observe: StepObserver,
    policy: ApprovalPolicy = AUTOMATIC,
    tools?: Readonly<Record<string, Tool>>,
  ) {
    this.tools = tools ?? createTools({ host, logger, foregroundWindowMs: 1000, approvalPolicy: policy });
  }

  say(userId: string, text: string): void {
    const seq = ++this.seq;
    this.inbox.push({ kind: 'message', seq, userId, message: { messageId: `m${seq}`, userId, text } });
  }

  answer(questionId: string, text: string, by: string): void {
    this.inbox.push({ kind: 'answer', seq: ++this.seq, userId: by, answer: { questionId, text, by } });
  }

  private now(): string {
    return new Date((this.clock += 1000)).toISOString();
  }

  /** The next item a run may take now (G10), consumed; undefined when there is none. */
  private nextItem(): WorkItem | undefined {
    for (;;) {
      const human = this.inbox.find((i) => !i.consumed);
      const wakeup = admitsWakeups(this.cp.conv) ? [...this.host.wakeups.values()].find((w) => !w.consumed && w.conversationId === this.conversationId && w.event) : undefined;
      let item: WorkItem | undefined;
      if (human) {
        human.consumed = true;
        item = human;
      } else if (wakeup) {
        wakeup.consumed = true;
        item = { kind: 'wakeup', taskId: wakeup.event.taskId, attempt: 1, userId: wakeup.event.userId, event: wakeup.event };
      }
      if (!item || !isStale(this.cp, item)) return item;
    }
  }

  /** True when nothing is queued that a run could take now. */
  quiet(): boolean {
    return !this.cp.active && !this.inbox.some((i) => !i.consumed) && !(admitsWakeups(this.cp.conv) && [...this.host.wakeups.values()].some((w) => !w.consumed && w.conversationId === this.conversationId && w.event));
  }

  /** One step: steer, advance the active run, or start the next run. False when there was nothing to do. */
  async step(): Promise<boolean> {
    const before = this.cp;
    let next: Checkpoint;
    if (before.active) {
      const steering = before.active.pending ? [] : this.inbox.filter((i): i is Extract<WorkItem, { kind: 'message' }> => i.kind === 'message' && !i.consumed);
      steering.forEach((m) => ((m as { consumed?: boolean }).consumed = true));
      next = steering.length ? steer(before, steering, this.now()) : await advance(this.conversationId, before, { model: this.model, tools: this.tools, logger, now: () => this.now() }, new AbortController().signal);
    } else {
      const item = this.nextItem();
      if (!item) return false;
      next = startRun(before, item, `r${++this.runs}`, this.now());
    }
    const published: ConversationEvent[] = [];
    for (const o of next.outbox) {
      if (this.published.has(o.msgId)) continue;
      this.published.add(o.msgId);
      published.push(o.event);
    }
    this.events.push(...published);
    this.cp = { ...next, outbox: [] };
    this.observe(before, this.cp, published);
    return true;
  }
}
