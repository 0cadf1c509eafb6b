// The conversation's head: title, link, live-connection badge, whose turn the agent's run is, and
// who is in the conversation (with a form to add someone).
import { fill, h } from './dom.js';

const CONNECTION = {
  connecting: ['Connecting…', 'conn-wait'],
  live: ['Live', 'conn-live'],
  reconnecting: ['Reconnecting…', 'conn-wait'],
  offline: ['Offline', 'conn-down'],
  refused: ['Not updating', 'conn-down'],
};

export class HeaderView {
  constructor(state, actions) {
    this.state = state;
    this.title = h('h1', { class: 'conv-name', testid: 'conversation-title' });
    this.conn = h('span', { class: 'conn', testid: 'connection' });
    this.run = h('div', { class: 'run', testid: 'run-status' });
    this.members = h('ul', { class: 'members', testid: 'members' });
    const input = h('input', { placeholder: 'user id', 'aria-label': 'User id to add', testid: 'add-member-input', autocomplete: 'off' });
    const link = h('button', { class: 'btn btn-ghost btn-small', type: 'button', title: 'Copy a link to this conversation', onclick: () => this.copyLink() }, 'Copy link');
    this.el = h(
      'header',
      { class: 'conv-head' },
      h('div', { class: 'conv-title-row' }, this.title, h('code', { class: 'conv-id', testid: 'conversation-id' }, state.id), link, this.conn),
      h(
        'div',
        { class: 'conv-meta' },
        this.run,
        h(
          'div',
          { class: 'people' },
          h('span', { class: 'muted' }, 'In this conversation:'),
          this.members,
          h(
            'form',
            {
              class: 'inline-form',
              onsubmit: async (e) => {
                e.preventDefault();
                const userId = input.value.trim();
                if (userId && (await actions.addMember(userId))) input.value = '';
              },
            },
            input,
            h('button', { class: 'btn btn-small', type: 'submit', testid: 'add-member' }, 'Add'),
          ),
        ),
      ),
    );
  }

  copyLink() {
    const url = `${location.origin}/#/c/${encodeURIComponent(this.state.id)}`;
    void navigator.clipboard?.writeText(url);
  }

  update(connection) {
    const s = this.state;
    const [label, cls] = CONNECTION[connection.state] || [connection.state, 'conn-wait'];
    this.conn.className = `conn ${cls}`;
    this.conn.dataset.state = connection.state;
    this.conn.textContent = connection.retryInMs ? `${label} (${Math.ceil(connection.retryInMs / 1000)} s)` : label;
    if (s.dirty.has('header')) this.title.textContent = s.title || 'Untitled conversation';
    if (s.dirty.has('run') || s.dirty.has('members') || s.dirty.has('header')) this.drawRun();
    if (s.dirty.has('members') || s.dirty.has('run')) this.drawMembers();
  }

  drawRun() {
    const s = this.state;
    const r = s.run;
    const who = r.userId ? (r.userId === s.me.userId ? 'your' : `${r.userId}’s`) : '';
    const queued = s.queue.length ? ` · ${s.queue.length} queued` : '';
    this.run.dataset.status = r.status;
    this.run.dataset.user = r.userId || '';
    if (r.status === 'running') fill(this.run, h('span', { class: 'pulse' }), `Agent running: ${who} turn${queued}`);
    else if (r.status === 'waiting') {
      const prompts = s.pendingPrompts().length;
      const what = prompts ? `an answer (${prompts} open)` : `${s.waitForTasks.length || 'its'} background task(s)`;
      fill(this.run, h('span', { class: 'dot dot-wait' }), `Agent waiting for ${what}; resumes as ${r.userId || 'the starter'}${queued}`);
    }
    else fill(this.run, h('span', { class: 'dot' }), `Agent idle${queued}`);
  }

  drawMembers() {
    const s = this.state;
    fill(
      this.members,
      [...s.members.keys()].map((userId) =>
        h(
          'li',
          { class: `member${userId === s.me.userId ? ' me' : ''}${s.run.status !== 'idle' && s.run.userId === userId ? ' turn' : ''}`, testid: 'member', dataset: { user: userId } },
          userId,
          userId === s.me.userId ? h('span', { class: 'muted' }, ' (you)') : null,
          s.run.status !== 'idle' && s.run.userId === userId ? h('span', { class: 'turn-badge', title: 'The agent is running on this person’s behalf' }, 'turn') : null,
        ),
      ),
    );
  }
}
