// One open conversation: loads the snapshot, follows the event stream, fetches output that did not
// come live, runs the user's actions and redraws the views (once per frame at most).
import { ApiError } from './api.js';
import { fill, framed, h, isTerminal, toast, uuid } from './dom.js';
import { HeaderView } from './header-view.js';
import { LogView } from './log-view.js';
import { OutputFollow } from './output-follow.js';
import { EventStream } from './sse.js';
import { ConversationState } from './state.js';
import { TasksView, TodosView } from './tasks-view.js';
import { TimelineView } from './timeline-view.js';

const INLINE_TAIL_BYTES = 64 * 1024;
const LOG_TAIL_BYTES = 2 * 1024 * 1024;

export class ConversationController {
  constructor({ api, me, id, root, onTitle }) {
    Object.assign(this, { api, me, id, root, onTitle });
    this.state = new ConversationState(id, me);
    this.render = framed(() => this.draw());
    this.filling = new Map();
    this.refill = new Set();
    this.connection = { state: 'connecting' };
    this.stopped = false;
  }

  async start() {
    fill(this.root, h('div', { class: 'empty' }, 'Opening the conversation…'));
    let snapshot;
    try {
      snapshot = await this.api.conversation(this.id);
    } catch (e) {
      if (this.stopped) return;
      const why = e instanceof ApiError && e.status === 404 ? 'It does not exist, or you are not a member of it.' : e.message;
      fill(this.root, h('div', { class: 'empty', testid: 'conversation-error' }, h('h2', {}, 'Cannot open this conversation'), h('p', {}, why)));
      return;
    }
    if (this.stopped) return;
    this.state.applySnapshot(snapshot, { full: true });
    this.onTitle(this.state.title);
    this.mount();
    await this.refreshTasks();
    this.stream = new EventStream({
      url: `/v1/conversations/${encodeURIComponent(this.id)}/events`,
      headers: () => this.api.headers,
      after: 0,
      onEvent: (e) => this.onEvent(e),
      onState: (s) => this.onStreamState(s),
    });
  }

  stop() {
    this.stopped = true;
    if (this.stream) this.stream.stop();
    this.unfollow();
  }

  mount() {
    const actions = {
      addMember: (userId) => this.act(() => this.api.addMember(this.id, userId), `${userId} added`),
      sendMessage: (text) => this.sendMessage(text),
      runCommand: (command) => this.runCommand(command),
      stopTask: (t) => this.stopTask(t),
      writeStdin: (t, data, close) => this.writeStdin(t, data, close),
      stopAll: () => this.stopAll(),
      openLog: (taskId) => this.openLog(taskId),
      closeLog: () => this.unfollow(),
      refreshLog: (taskId) => this.fillOutput(taskId, LOG_TAIL_BYTES),
      decide: (approvalId, decision) => this.act(() => this.api.decideApproval(this.id, approvalId, decision)),
      answer: (questionId, text) => this.act(() => this.api.answerQuestion(this.id, questionId, text)),
    };
    this.header = new HeaderView(this.state, actions);
    this.timeline = new TimelineView(this.state, actions);
    this.todos = new TodosView(this.state);
    this.tasks = new TasksView(this.state, actions);
    this.log = new LogView(this.state, actions);
    fill(
      this.root,
      h(
        'section',
        { class: 'conv', testid: 'conversation', dataset: { id: this.id } },
        this.header.el,
        h('div', { class: 'conv-body' }, this.timeline.el, h('aside', { class: 'side' }, this.todos.el, this.tasks.el, this.log.el)),
      ),
    );
    this.draw();
  }

  draw() {
    if (this.stopped || !this.header) return;
    const s = this.state;
    this.header.update(this.connection);
    this.timeline.update();
    this.todos.update();
    this.tasks.update();
    this.log.update();
    s.dirty.clear();
    s.changed.clear();
    s.outputChanged.clear();
  }

  onEvent(e) {
    if (!this.state.apply(e)) return;
    const d = e.data || {};
    if (e.event === 'conversation.created') this.onTitle(this.state.title);
    // The open log follows its task: task events may mean new durable bytes (after the window).
    if (e.event.startsWith('task.') && d.taskId === this.log.taskId && e.event !== 'task.started') void this.fillOutput(d.taskId, LOG_TAIL_BYTES);
    if (e.event === 'epoch.ended') void this.refreshTasks();
    if (e.event === 'task.started' || e.event === 'task.finished') this.refreshTask(d.taskId, e.event === 'task.started' ? 'startedAt' : 'finishedAt');
    for (const taskId of this.state.gaps) void this.fillOutput(taskId, taskId === this.log.taskId ? LOG_TAIL_BYTES : INLINE_TAIL_BYTES);
    this.state.gaps.clear();
    this.render();
  }

  onStreamState(s) {
    const wasDown = this.connection.state !== 'live' && this.connection.state !== 'connecting';
    this.connection = s;
    if (s.state === 'live' && wasDown) {
      // Events resume where they stopped; the lists are re-read in case the gap was long.
      void this.refreshTasks();
      this.api.conversation(this.id).then((v) => (this.state.applySnapshot(v, { full: false }), this.render()), () => undefined);
    }
    if (s.state === 'refused' && s.error.status === 401) return this.api.onUnauthorized();
    if (s.state === 'refused') toast(`Live updates stopped: ${s.error.message}`, 'error');
    this.render();
  }

  async refreshTasks() {
    try {
      for (const t of await this.api.tasks(this.id)) this.state.mergeTask(t);
      this.render();
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
    }
  }

  /** Reads one task again (times, deadline) unless what the event changed is already known. */
  refreshTask(taskId, field) {
    const t = this.state.tasks.get(taskId);
    if (!taskId || (t && t[field])) return;
    this.api.task(taskId).then(
      (task) => (this.state.mergeTask(task), this.render()),
      () => undefined,
    );
  }

  /**
   * Fetches the task's durable output after what is held, following X-Next-Offset, keeping at most
   * `tailBytes` (a long log shows its tail). One fetch per task at a time; a request made during
   * one runs again after it.
   */
  fillOutput(taskId, tailBytes) {
    if (this.filling.has(taskId)) {
      this.refill.add(taskId);
      return this.filling.get(taskId);
    }
    const run = (async () => {
      do {
        this.refill.delete(taskId);
        const o = this.state.output(taskId);
        const t = this.state.tasks.get(taskId);
        const want = Math.max(0, Math.max(o.end, (t && t.outputBytes) || 0) - tailBytes);
        if (o.start > want || o.end < want) o.skipTo(want);
        for (let i = 0; i < 1000; i++) {
          const slice = await this.api.output(taskId, o.end);
          const last = slice.complete || (t && isTerminal(t.status) && slice.bytes.length < 4 * 1024 * 1024);
          const took = o.slice(slice.from, slice.bytes, last);
          this.state.outputChanged.add(taskId);
          this.render();
          if (slice.bytes.length === 0 || took === 0 || slice.complete) break;
        }
      } while (this.refill.has(taskId) && !this.stopped);
    })()
      .catch((e) => {
        if (!(e instanceof ApiError)) throw e;
      })
      .finally(() => this.filling.delete(taskId));
    this.filling.set(taskId, run);
    return run;
  }

  openLog(taskId) {
    this.unfollow();
    this.log.show(taskId);
    this.render();
    void this.fillOutput(taskId, LOG_TAIL_BYTES).then(() => this.follow(taskId));
  }

  /**
   * While the log of an unfinished task is open, its output comes live from the follow stream (also
   * after the foreground window, when the conversation's events no longer carry it).
   */
  follow(taskId) {
    const t = this.state.tasks.get(taskId);
    if (this.stopped || this.log.taskId !== taskId || (this.following && this.following.taskId === taskId) || (t && isTerminal(t.status) && t.resultState !== 'result_pending')) return;
    const o = this.state.output(taskId);
    this.following = new OutputFollow({
      taskId,
      headers: () => this.api.headers,
      offset: () => o.end,
      onChunk: (offset, bytes) => {
        // A chunk past what is held (bytes dropped while the view skipped ahead): fetch the rest.
        if (o.slice(offset, bytes, false) === 0 && offset > o.end) void this.fillOutput(taskId, LOG_TAIL_BYTES);
        this.state.outputChanged.add(taskId);
        this.render();
      },
      onTruncated: (d) => {
        o.skipTo(d.droppedTo);
        this.state.outputChanged.add(taskId);
        this.render();
      },
      onEnd: () => {
        this.following = null;
        void this.fillOutput(taskId, LOG_TAIL_BYTES);
      },
    });
  }

  unfollow() {
    if (this.following) this.following.stop();
    this.following = null;
  }

  async act(f, done) {
    try {
      await f();
      if (done) toast(done);
      return true;
    } catch (e) {
      toast(e.message, 'error');
      return false;
    }
  }

  async sendMessage(text) {
    const clientMessageId = uuid();
    this.state.pendingMessage(clientMessageId, text);
    this.render();
    try {
      const r = await this.api.postMessage(this.id, text, clientMessageId);
      if (r && r.disposition && r.disposition !== 'started') toast(`Message ${r.disposition}: the agent takes it after the current turn`);
      return true;
    } catch (e) {
      this.state.failMessage(clientMessageId, e.message);
      this.render();
      return false;
    }
  }

  async runCommand(command) {
    try {
      const { taskId, commandId } = await this.api.runCommand(this.id, command, uuid());
      this.state.mergeTask({ taskId, commandId, command, userId: this.me.userId, status: 'starting' });
      if (!this.state.byKey.has(`task:${taskId}`)) this.state.item(`task:${taskId}`, { kind: 'task', taskId });
      this.render();
      return true;
    } catch (e) {
      toast(`The command was not started: ${e.message}`, 'error');
      return false;
    }
  }

  async stopTask(t) {
    const ok = await this.act(() => this.api.stopTask(t.taskId, t.attempt));
    // 202 {status: "stopping"}: show it now; task.stopping confirms it for everyone.
    if (ok) this.state.mergeTask({ taskId: t.taskId, status: 'stopping' });
    this.render();
  }

  async writeStdin(t, data, close) {
    const ok = await this.act(() => this.api.writeStdin(t.taskId, { data, close, ...(t.attempt ? { attempt: t.attempt } : {}) }));
    // 202: the prompt is answered; task.stdin tells everyone else.
    if (ok) this.state.mergeTask({ taskId: t.taskId, awaiting: null });
    this.render();
  }

  async stopAll() {
    try {
      const r = await this.api.stopAll(this.id, this.state.epoch);
      for (const taskId of (r && r.stopping) || []) this.state.mergeTask({ taskId, status: 'stopping' });
      toast(`Stopping ${((r && r.stopping) || []).length} task(s)`);
      this.render();
    } catch (e) {
      toast(`Stop all failed: ${e.message}`, 'error');
    }
  }
}
