// The log of one task: its durable output (fetched from the output API), then live from the task's
// output follow stream until it ends; Follow keeps the end in view.
import { chip, fill, h, isTerminal, taskChip } from './dom.js';

export class LogView {
  constructor(state, actions) {
    this.state = state;
    this.actions = actions;
    this.taskId = null;
    this.drawn = { generation: -1, chars: 0 };
    this.head = h('div', { class: 'log-head' });
    this.follow = h('input', { type: 'checkbox', checked: true, testid: 'log-follow' });
    this.pre = h('pre', { class: 'log', testid: 'log-output', tabindex: 0 });
    this.note = h('p', { class: 'muted small', testid: 'log-note' });
    this.pre.addEventListener('scroll', () => {
      // Scrolling up to read stops following; scrolling back to the end follows again.
      const atEnd = this.pre.scrollHeight - this.pre.scrollTop - this.pre.clientHeight < 24;
      if (this.follow.checked !== atEnd) this.follow.checked = atEnd;
    });
    this.el = h(
      'section',
      { class: 'panel log-panel', testid: 'log-panel', hidden: true },
      this.head,
      h(
        'div',
        { class: 'log-controls' },
        h('label', { class: 'small' }, this.follow, ' Follow'),
        h('button', { class: 'btn btn-small', type: 'button', testid: 'log-refresh', onclick: () => this.taskId && this.actions.refreshLog(this.taskId) }, 'Refresh'),
        h('button', { class: 'btn btn-small btn-ghost', type: 'button', onclick: () => (this.show(null), this.actions.closeLog && this.actions.closeLog()) }, 'Close'),
      ),
      this.pre,
      this.note,
    );
  }

  show(taskId) {
    this.taskId = taskId;
    this.el.hidden = !taskId;
    this.drawn = { generation: -1, chars: 0 };
    this.pre.textContent = '';
    this.follow.checked = true;
    this.state.touch('tasks');
    if (taskId) this.state.outputChanged.add(taskId);
  }

  update() {
    const s = this.state;
    if (!this.taskId) return;
    const t = s.tasks.get(this.taskId) || { taskId: this.taskId, status: 'starting' };
    if (s.dirty.has('tasks')) {
      fill(this.head, h('h2', {}, 'Log'), h('code', { class: 'cmd' }, t.command || t.taskId), chip(taskChip(t), 'log-status'), chip(t.resultState || 'result_pending', 'log-result'));
      this.note.textContent =
        t.resultState === 'unavailable'
          ? 'The sandbox host was lost: this is the durable part of the output; the rest is missing.'
          : t.status === 'stopping'
            ? 'Stopping: the runner has sent SIGTERM to the command’s processes and sends SIGKILL when the grace period ends.'
            : !isTerminal(t.status) && t.background
            ? 'Running in the background: output is saved as it is produced and shown here as it comes.'
            : '';
    }
    if (!s.outputChanged.has(this.taskId)) return;
    const o = s.output(this.taskId);
    if (o.generation !== this.drawn.generation || o.chars < this.drawn.chars) {
      this.pre.textContent = (o.truncated ? `… (earlier output not shown; the API has all of it from offset 0)\n` : '') + o.text;
    } else if (o.chars > this.drawn.chars) {
      this.pre.append(o.text.slice(this.drawn.chars));
    }
    this.drawn = { generation: o.generation, chars: o.chars };
    if (this.follow.checked) this.pre.scrollTop = this.pre.scrollHeight;
  }
}
