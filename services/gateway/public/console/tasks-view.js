// The side panels: the agent's todo list, and the background-task panel (status and result chips,
// Log, Stop on each task, Stop all).
import { chip, fill, h, isTerminal, taskChip, timeOf } from './dom.js';

const TODO_MARK = { pending: '○', in_progress: '◐', completed: '●' };

/** The receipt's evidence as a tooltip: runner, generation, times, bytes. */
function receiptEvidence(r) {
  const e = r.evidence || {};
  return [`runner ${e.runnerId || '-'}`, `epoch ${e.epoch} · attempt ${e.attempt}`, `started ${e.startedAt || '-'}`, `finished ${e.finishedAt}`, `${e.outputBytes} bytes (${e.resultState})`, e.exitReason ? `runner reason: ${e.exitReason}` : ''].filter(Boolean).join('\n');
}

export class TodosView {
  constructor(state) {
    this.state = state;
    this.list = h('ol', { class: 'todos', testid: 'todos' });
    this.wait = h('p', { class: 'muted small', testid: 'wait' });
    this.el = h('section', { class: 'panel' }, h('h2', {}, 'Todos'), this.list, this.wait);
  }

  update() {
    const s = this.state;
    if (!s.dirty.has('todos') && !s.dirty.has('tasks')) return;
    fill(
      this.list,
      s.todos.length
        ? s.todos.map((t) =>
            h(
              'li',
              { class: `todo todo-${t.status}`, testid: 'todo', dataset: { status: t.status } },
              h('span', { class: 'todo-mark', 'aria-hidden': 'true' }, TODO_MARK[t.status] || '?'),
              h('span', { class: 'todo-text' }, t.content),
              h('span', { class: 'todo-status' }, t.status.replace('_', ' ')),
              (t.taskIds || []).map((id) => {
                const task = s.tasks.get(id);
                return task ? chip(taskChip(task), 'todo-task', task.command) : null;
              }),
            ),
          )
        : h('li', { class: 'muted small' }, 'No todos yet.'),
    );
    this.wait.textContent = s.waitForTasks.length ? `Waiting for: ${s.waitForTasks.map((id) => (s.tasks.get(id) || {}).command || id).join(', ')}` : '';
  }
}

export class TasksView {
  constructor(state, actions) {
    this.state = state;
    this.actions = actions;
    this.armed = null;
    this.count = h('span', { class: 'muted small', testid: 'tasks-count' });
    this.stopAll = h('button', { class: 'btn btn-small btn-danger', type: 'button', testid: 'stop-all', onclick: () => this.onStopAll() }, 'Stop all');
    this.list = h('ul', { class: 'tasks', testid: 'tasks' });
    this.el = h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', {}, 'Tasks'), this.count, this.stopAll), this.list);
  }

  /** Stop all ends every task and the agent's turn: the first click arms it, the second confirms. */
  onStopAll() {
    if (this.armed) {
      clearTimeout(this.armed);
      this.armed = null;
      this.stopAll.textContent = 'Stop all';
      this.stopAll.classList.remove('armed');
      void this.actions.stopAll();
      return;
    }
    this.stopAll.textContent = 'Confirm stop all';
    this.stopAll.classList.add('armed');
    this.armed = setTimeout(() => {
      this.armed = null;
      this.stopAll.textContent = 'Stop all';
      this.stopAll.classList.remove('armed');
    }, 5000);
  }

  update() {
    const s = this.state;
    if (!s.dirty.has('tasks')) return;
    const tasks = [...s.tasks.values()].reverse();
    const live = tasks.filter((t) => !isTerminal(t.status));
    this.count.textContent = `${live.length} unfinished · ${tasks.length} in all`;
    this.stopAll.disabled = live.length === 0 && s.run.status === 'idle';
    fill(this.list, tasks.length ? tasks.map((t) => this.row(t)) : h('li', { class: 'muted small' }, 'No tasks yet.'));
  }

  row(t) {
    const state = taskChip(t);
    return h(
      'li',
      { class: `task-row state-${state}`, testid: 'task-row', dataset: { taskId: t.taskId, status: state } },
      h(
        'div',
        { class: 'task-row-top' },
        chip(state, 'task-status'),
        chip(t.resultState || 'result_pending', 'task-result'),
        // A condition wait on it held while it runs (issue 10.1): the agent went on.
        t.condition?.outcome === 'matched' && !isTerminal(t.status) ? chip('ready', 'task-ready') : null,
        h('code', { class: 'cmd', title: t.command }, t.command || t.taskId),
      ),
      // How it ended (issue 10.4): the receipt's sentence, its evidence on hover.
      t.receipt ? h('p', { class: 'small task-receipt', testid: 'task-receipt', title: receiptEvidence(t.receipt), dataset: { outcome: t.receipt.outcome } }, t.receipt.summary) : null,
      h(
        'div',
        { class: 'task-row-bottom' },
        h('span', { class: 'muted small' }, [t.userId, t.attempt > 1 ? `attempt ${t.attempt}` : '', t.exitCode !== null && t.exitCode !== undefined ? `exit ${t.exitCode}` : '', t.signal || '', timeOf(t.startedAt || t.createdAt)].filter(Boolean).join(' · ')),
        h('button', { class: 'btn btn-small', type: 'button', testid: 'open-log', onclick: () => this.actions.openLog(t.taskId) }, 'Log'),
        isTerminal(t.status)
          ? null
          : h('button', { class: 'btn btn-small btn-danger', type: 'button', testid: 'stop-task', disabled: t.status === 'stopping', onclick: () => this.actions.stopTask(t) }, t.status === 'stopping' ? 'Stopping…' : 'Stop'),
      ),
    );
  }
}
