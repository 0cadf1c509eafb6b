import { headers as natsHeaders } from '@nats-io/transport-node';
import { decodeConversationEvent, decodeSandboxCommandEvent, decodeTaskEvent, type Topology } from '@handplane/contracts';
import type { Nats } from '@handplane/platform';

/** The seeded PRNG of @handplane/testing (mulberry32): the same seed gives the same workload. */
export { seededRandom as prng } from '@handplane/testing';

interface Conv {
  id: string;
  tenant: string;
  users: string[];
  messages: string[];
  questions: string[];
  approvals: string[];
  tasks: string[];
  run?: string;
  epoch: number;
}
interface Task {
  id: string;
  commandId: string;
  conv: Conv;
  user: string;
  step: number;
  offset: number;
  attempt: number;
}

/**
 * Random but schema-valid traffic on CONV, TASKS (`task.*` and `cmd.*`) and LOGS, as the services
 * write it (plus an occasional unreadable message, which every projection must skip the same way).
 * `lastSeq` keeps, per stream and subject kind, the last sequence published.
 */
export class Workload {
  readonly lastSeq: Record<string, number> = {};
  published = 0;
  private readonly convs: Conv[] = [];
  private readonly tasks: Task[] = [];
  private n = 0;
  private clock = Date.parse('2026-01-01T00:00:00Z');

  constructor(
    private readonly nats: Nats,
    private readonly t: Topology,
    private readonly rnd: () => number,
  ) {}

  private pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rnd() * xs.length)]!;
  }
  private id(kind: string): string {
    return `${kind}${(this.n++).toString(36)}`;
  }
  private at(): string {
    this.clock += 1 + Math.floor(this.rnd() * 1000);
    return new Date(this.clock).toISOString();
  }

  private async publish(stream: 'CONV' | 'TASKS' | 'LOGS', kind: string, subject: string, payload: Uint8Array, headers?: Record<string, string>): Promise<void> {
    const h = natsHeaders();
    for (const [k, v] of Object.entries(headers ?? {})) h.set(k, v);
    const ack = await this.nats.js.publish(subject, payload, { headers: h });
    this.lastSeq[stream] = ack.seq;
    this.lastSeq[`${stream}:${kind}`] = ack.seq;
    this.published++;
  }

  private async conv(c: Conv, type: string, data: unknown): Promise<void> {
    const bytes = Buffer.from(JSON.stringify({ type, v: 1, data, metadata: { at: this.at(), actor: c.users[0] } }));
    decodeConversationEvent(bytes); // the workload itself must be valid
    await this.publish('CONV', 'conv', this.t.conv(c.id), bytes);
  }

  private async task(tk: Task, type: string, data: Record<string, unknown>): Promise<void> {
    const bytes = Buffer.from(JSON.stringify({ type, v: 1, data: { taskId: tk.id, commandId: tk.commandId, attempt: tk.attempt, ...data }, metadata: { at: this.at() } }));
    decodeTaskEvent(bytes);
    await this.publish('TASKS', 'task', this.t.task(tk.id), bytes);
  }

  private async cmd(tk: Task, type: string, data: Record<string, unknown>): Promise<void> {
    const bytes = Buffer.from(JSON.stringify({ type, v: 1, data: { commandId: tk.commandId, taskId: tk.id, attempt: tk.attempt, ...data }, metadata: { at: this.at() } }));
    decodeSandboxCommandEvent(bytes);
    await this.publish('TASKS', 'cmd', this.t.cmd(tk.commandId), bytes);
  }

  private async newConversation(): Promise<void> {
    const c: Conv = { id: this.id('c'), tenant: this.pick(['acme', 'globex']), users: [this.pick(['alice', 'bob', 'carol'])], messages: [], questions: [], approvals: [], tasks: [], epoch: 1 };
    this.convs.push(c);
    await this.conv(c, 'conversation.created', { conversationId: c.id, tenant: c.tenant, title: `t ${c.id}`, createdBy: c.users[0] });
  }

  private async convStep(c: Conv): Promise<void> {
    const r = this.rnd();
    const user = this.pick(c.users);
    if (r < 0.08) {
      const u = this.pick(['dave', 'erin', 'frank', 'alice']);
      if (!c.users.includes(u)) c.users.push(u);
      return this.conv(c, 'member.added', { conversationId: c.id, userId: u, addedBy: c.users[0] });
    }
    if (r < 0.25) {
      const m = this.id('m');
      c.messages.push(m);
      return this.conv(c, 'message.user', { messageId: m, userId: user, text: `hello ${m}` });
    }
    if (r < 0.37) {
      if (c.run) {
        const outcome = this.pick(['completed', 'waiting', 'stopped', 'failed'] as const);
        const runId = c.run;
        if (outcome !== 'waiting') c.run = undefined;
        return this.conv(c, 'run.finished', { runId, outcome, ...(this.rnd() < 0.3 ? { detail: 'why' } : {}) });
      }
      c.run = this.id('r');
      const trigger = c.tasks.length && this.rnd() < 0.3 ? 'task_event' : c.questions.length && this.rnd() < 0.2 ? 'answer' : 'message';
      const ref =
        trigger === 'task_event' ? { taskId: this.pick(c.tasks) } : trigger === 'answer' ? { questionId: this.pick(c.questions) } : c.messages.length ? { messageId: this.pick(c.messages) } : {};
      return this.conv(c, 'run.started', { runId: c.run, userId: user, trigger, ...ref });
    }
    if (r < 0.5) {
      const todos = Array.from({ length: Math.floor(this.rnd() * 4) }, (_, i) => ({
        id: `todo${i}`,
        content: `step ${i} ${this.n}`,
        status: this.pick(['pending', 'in_progress', 'completed'] as const),
        taskIds: c.tasks.length && this.rnd() < 0.5 ? [this.pick(c.tasks)] : [],
      }));
      const waitFor = todos.flatMap((x) => x.taskIds).filter(() => this.rnd() < 0.5);
      return this.conv(c, 'todos.updated', { ...(c.run ? { runId: c.run } : {}), todos, waitForTasks: waitFor });
    }
    if (r < 0.58) {
      const q = this.id('q');
      c.questions.push(q);
      await this.conv(c, 'question.asked', { questionId: q, runId: c.run ?? 'r0', text: `why ${q}?` });
      if (this.rnd() < 0.7) await this.conv(c, 'question.answered', { questionId: q, text: 'because', by: user });
      return;
    }
    if (r < 0.66) {
      const a = this.id('a');
      c.approvals.push(a);
      await this.conv(c, 'approval.requested', { approvalId: a, runId: c.run ?? 'r0', command: 'rm -rf build', reason: 'policy' });
      if (this.rnd() < 0.8) await this.conv(c, 'approval.resolved', { approvalId: a, decision: this.pick(['approve', 'reject'] as const), by: user, automated: this.rnd() < 0.4 });
      return;
    }
    if (r < 0.7) {
      c.epoch++;
      return this.conv(c, 'epoch.ended', { epoch: c.epoch - 1, nextEpoch: c.epoch, stoppedTaskIds: [], stoppedTasks: [], by: user });
    }
    if (r < 0.73) {
      // Unreadable: skipped by every projection, live and rebuilt alike.
      return this.publish('CONV', 'conv', this.t.conv(c.id), Buffer.from(this.rnd() < 0.5 ? 'not json' : '{"type":"run.started","v":1,"data":{}}'));
    }
    if (r < 0.85) {
      const tk: Task = { id: this.id('t'), commandId: this.id('k'), conv: c, user, step: 0, offset: 0, attempt: 1 };
      this.tasks.push(tk);
      c.tasks.push(tk.id);
      return this.task(tk, 'TaskRegistered', {
        conversationId: c.id,
        tenant: c.tenant,
        userId: user,
        origin: this.pick(['user', 'agent'] as const),
        ...(c.run ? { runId: c.run } : {}),
        command: `echo ${tk.id}`,
        cwd: '',
        env: {},
        epoch: c.epoch,
        foregroundWindowMs: 60_000,
        timeoutMs: 3_600_000,
        registeredAt: this.at(),
      });
    }
    return this.conv(c, 'command.output', { taskId: 'tx', commandId: 'kx', offset: 0, text: 'noise', bytes: 5 });
  }

  private async taskStep(tk: Task): Promise<void> {
    const startedAt = new Date(this.clock).toISOString();
    switch (tk.step++) {
      case 0:
        return this.task(tk, 'TaskStarted', { runnerId: 'runner-1', startedAt });
      case 1:
      case 2:
      case 3: {
        if (tk.step === 2 && this.rnd() < 0.5) await this.task(tk, 'TaskBackgrounded', { backgroundedAt: this.at() });
        const bytes = Buffer.from(`chunk ${tk.offset} of ${tk.id}\n`.repeat(1 + Math.floor(this.rnd() * 3)));
        await this.publish('LOGS', 'log', this.t.log(tk.commandId), bytes, { 'Hp-Offset': String(tk.offset), 'Hp-Stream': this.rnd() < 0.2 ? 'stderr' : 'stdout' });
        tk.offset += bytes.length;
        // Prompts and input (the registry's awaitingInput, projection task-prompts).
        if (this.rnd() < 0.3) await this.conv(tk.conv, 'task.awaiting_input', { taskId: tk.id, commandId: tk.commandId, attempt: tk.attempt, offset: tk.offset, prompt: `Continue ${tk.step}? [y/N]` });
        if (this.rnd() < 0.3) {
          await this.conv(tk.conv, 'task.stdin', { taskId: tk.id, commandId: tk.commandId, attempt: tk.attempt, by: tk.user, via: 'user', bytes: 2, sha256: 'e3b0', closed: this.rnd() < 0.2 });
        }
        return;
      }
      case 4: {
        const exitCode = this.rnd() < 0.8 ? 0 : 1;
        await this.publish('LOGS', 'log', this.t.log(tk.commandId), new Uint8Array(0), {
          'Hp-Offset': String(tk.offset),
          'Hp-Exit': JSON.stringify({ exitCode, signal: null, endOffset: tk.offset }),
        });
        if (this.rnd() < 0.1) {
          const truncation = { droppedFrom: 1, droppedTo: 2, droppedBytes: 1 };
          await this.publish('LOGS', 'log', this.t.log(tk.commandId), new Uint8Array(0), { 'Hp-Offset': '1', 'Hp-Truncated': JSON.stringify(truncation) });
        }
        await this.cmd(tk, 'CommandExited', { runnerId: 'runner-1', exitCode, signal: null, endOffset: tk.offset, startedAt, finishedAt: this.at(), reason: '' });
        const readable = this.rnd() < 0.9;
        await this.cmd(tk, readable ? 'CommandResultReadable' : 'CommandResultUnavailable', readable ? { outputBytes: tk.offset } : { durableBytes: tk.offset, reason: 'lost' });
        const status = exitCode === 0 ? 'succeeded' : 'failed';
        await this.task(tk, 'TaskFinished', { status, exitCode, signal: null, resultState: 'readable', outputBytes: tk.offset, finishedAt: this.at() });
        const c = tk.conv;
        return this.conv(c, 'task.internal_event', {
          taskId: tk.id,
          commandId: tk.commandId,
          attempt: tk.attempt,
          userId: tk.user,
          origin: 'user',
          status,
          exitCode,
          signal: null,
          resultState: 'readable',
          outputBytes: tk.offset,
        });
      }
      case 5:
        return this.cmd(tk, 'CommandResultDelivered', { deliveredTo: this.pick(['agent', 'user'] as const) });
      default:
        return;
    }
  }

  /** Publishes `count` more events (a step may publish a few). */
  async run(count: number): Promise<void> {
    const until = this.published + count;
    while (this.published < until) {
      const live = this.tasks.filter((x) => x.step <= 5);
      if (this.convs.length < 3 || this.rnd() < 0.05) await this.newConversation();
      else if (live.length && this.rnd() < 0.45) await this.taskStep(this.pick(live));
      else await this.convStep(this.pick(this.convs));
    }
  }
}
