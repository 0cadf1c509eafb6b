// The conversation: messages, agent replies, tool calls, tasks with their streaming output, system
// notes, and question and approval cards. Items are appended or redrawn in place, never rebuilt.
import { chip, h, isTerminal, taskChip } from './dom.js';
import { stdinBox } from './stdin-view.js';

const INLINE_CHARS = 4000;

export class TimelineView {
  constructor(state, actions) {
    this.state = state;
    this.actions = actions;
    this.nodes = new Map();
    this.outputs = new Map();
    this.drawn = 0;
    this.list = h('ol', { class: 'timeline', testid: 'timeline' });
    this.scroller = h('div', { class: 'timeline-scroll' }, this.list);
    this.input = h('textarea', { rows: 3, placeholder: 'Message the agent (lines starting with $ are commands for it), or type a shell command and press Run command', testid: 'composer-input', 'aria-label': 'Message or command' });
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) (e.preventDefault(), void this.submit('message'));
    });
    this.el = h(
      'div',
      { class: 'timeline-col' },
      this.scroller,
      h(
        'form',
        { class: 'composer', onsubmit: (e) => (e.preventDefault(), void this.submit('message')) },
        this.input,
        h(
          'div',
          { class: 'composer-actions' },
          h('span', { class: 'muted small' }, 'Enter sends to the agent · Shift+Enter new line'),
          h('button', { class: 'btn', type: 'button', testid: 'run-command', onclick: () => void this.submit('command') }, 'Run command'),
          h('button', { class: 'btn btn-primary', type: 'submit', testid: 'send-message' }, 'Send'),
        ),
      ),
    );
  }

  async submit(kind) {
    const text = this.input.value;
    if (!text.trim()) return;
    const ok = kind === 'command' ? await this.actions.runCommand(text.trim()) : await this.actions.sendMessage(text);
    if (ok) this.input.value = '';
  }

  update() {
    const s = this.state;
    const sc = this.scroller;
    const atBottom = sc.scrollHeight - sc.scrollTop - sc.clientHeight < 40;
    for (; this.drawn < s.items.length; this.drawn++) {
      const it = s.items[this.drawn];
      const node = this.draw(it);
      this.nodes.set(it.key, node);
      this.list.append(node);
      s.changed.delete(it.key);
    }
    for (const key of s.changed) {
      const old = this.nodes.get(key);
      const it = s.byKey.get(key);
      if (!old || !it) continue;
      const node = this.draw(it);
      old.replaceWith(node);
      this.nodes.set(key, node);
    }
    for (const taskId of s.outputChanged) this.drawOutput(taskId);
    if (atBottom) sc.scrollTop = sc.scrollHeight;
  }

  draw(it) {
    const seq = it.seq ? String(it.seq) : '';
    switch (it.kind) {
      case 'message':
        return h(
          'li',
          { class: `item msg${it.userId === this.state.me.userId ? ' mine' : ''}${it.pending ? ' pending' : ''}`, testid: 'message', dataset: { seq, user: it.userId } },
          h('div', { class: 'who' }, it.userId, it.pending ? h('span', { class: 'muted' }, ' · sending…') : null),
          h('div', { class: 'text' }, it.text),
          it.error ? h('div', { class: 'form-error' }, `Not sent: ${it.error}`) : null,
        );
      case 'assistant':
        return h('li', { class: 'item msg agent', testid: 'assistant-message', dataset: { seq } }, h('div', { class: 'who' }, 'agent'), h('div', { class: 'text' }, it.text));
      case 'tool':
        return h(
          'li',
          { class: `item tool${it.done && !it.ok ? ' bad' : ''}`, testid: 'tool-call', dataset: { seq }, title: `${it.name} ${brief(it.args, 2000)}${it.done ? `\n→ ${brief(it.result, 2000)}` : ''}` },
          h('span', { class: 'tool-name' }, it.name, ' '),
          h('code', { class: 'tool-args' }, brief(it.args), ' '),
          it.done ? h('span', { class: 'tool-result' }, it.ok ? '→ ok ' : '→ refused ', brief(it.result)) : h('span', { class: 'muted' }, ' …'),
        );
      case 'task':
        return this.drawTask(it);
      case 'approval':
        return this.drawApproval(it);
      case 'question':
        return this.drawQuestion(it);
      default:
        return h('li', { class: `item system tone-${it.tone || 'info'}`, testid: 'system-note', dataset: { seq } }, it.text);
    }
  }

  drawTask(it) {
    const t = this.state.tasks.get(it.taskId) || { taskId: it.taskId, status: 'starting' };
    const pre = h('pre', { class: 'out', testid: 'inline-output' });
    this.outputs.set(it.taskId, pre);
    const node = h(
      'li',
      { class: 'item task', testid: 'timeline-task', dataset: { seq: it.seq ? String(it.seq) : '', taskId: it.taskId } },
      h(
        'div',
        { class: 'task-line' },
        h('code', { class: 'cmd' }, '$ ', t.command || '…'),
        chip(taskChip(t), 'task-status'),
        t.resultState ? chip(t.resultState, 'task-result') : null,
        h('span', { class: 'muted small' }, t.userId ? `by ${t.userId}` : '', t.exitCode !== null && t.exitCode !== undefined ? ` · exit ${t.exitCode}` : '', t.signal ? ` · ${t.signal}` : ''),
        h('button', { class: 'btn btn-small', type: 'button', onclick: () => this.actions.openLog(it.taskId) }, 'Log'),
        !isTerminal(t.status) && t.status !== 'stopping' ? h('button', { class: 'btn btn-small btn-danger', type: 'button', onclick: () => this.actions.stopTask(t) }, 'Stop') : null,
      ),
      pre,
      stdinBox(t, this.actions),
    );
    this.drawOutput(it.taskId);
    return node;
  }

  drawOutput(taskId) {
    const pre = this.outputs.get(taskId);
    const o = this.state.outputs.get(taskId);
    if (!pre || !o) return;
    const text = o.tail(INLINE_CHARS);
    pre.textContent = (o.truncated || o.chars > INLINE_CHARS ? '…' : '') + text;
    pre.hidden = text.length === 0;
  }

  drawApproval(it) {
    const s = this.state;
    return h(
      'li',
      { class: `item card-item approval${it.resolved ? ' resolved' : ''}`, testid: 'approval-card', dataset: { id: it.id } },
      h('div', { class: 'card-title' }, 'The agent asks for approval to run'),
      it.command ? h('code', { class: 'approval-cmd' }, '$ ', it.command) : null,
      it.reason ? h('div', { class: 'text' }, it.reason) : null,
      it.resolved
        ? h('div', { class: 'muted', testid: 'approval-outcome' }, `${it.decision === 'approve' ? 'Approved' : it.decision === 'reject' ? 'Rejected' : 'Resolved'}${it.by ? ` by ${it.by}` : ''}${it.automated ? ' (automatic policy)' : ''}`)
        : h(
            'div',
            { class: 'card-actions' },
            h('button', { class: 'btn btn-primary', type: 'button', testid: 'approve', onclick: () => this.actions.decide(it.id, 'approve') }, 'Approve'),
            h('button', { class: 'btn btn-danger', type: 'button', testid: 'reject', onclick: () => this.actions.decide(it.id, 'reject') }, 'Reject'),
            h('span', { class: 'muted small' }, `as ${s.me.userId}`),
          ),
    );
  }

  drawQuestion(it) {
    const input = h('input', { placeholder: 'Your answer', testid: 'answer-input', 'aria-label': 'Answer' });
    return h(
      'li',
      { class: `item card-item question${it.answered ? ' resolved' : ''}`, testid: 'question-card', dataset: { id: it.id } },
      h('div', { class: 'card-title' }, 'The agent asks'),
      h('div', { class: 'text' }, it.text),
      it.answered
        ? h('div', { class: 'muted', testid: 'question-outcome' }, `Answered${it.by ? ` by ${it.by}` : ''}: ${it.answer}`)
        : h(
            'form',
            {
              class: 'card-actions',
              onsubmit: async (e) => {
                e.preventDefault();
                if (input.value.trim()) await this.actions.answer(it.id, input.value.trim());
              },
            },
            input,
            h('button', { class: 'btn btn-primary', type: 'submit', testid: 'answer' }, 'Answer'),
          ),
    );
  }
}

function brief(v, max = 160) {
  if (v === undefined || v === null) return '';
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max)}…` : s;
}
