// The conversation list. The API has no "my conversations" route, so the list is what this browser
// created or opened (localStorage, per tenant and user), plus the conversations of tasks the
// registry (GET /v1/tasks) shows, where the gateway has that route.
import { ApiError } from './api.js';
import { fill, h, toast } from './dom.js';

const MAX = 50;

export class Sidebar {
  constructor(api, me, open) {
    this.api = api;
    this.open = open;
    this.key = `handplane.conversations.v1:${me.tenant}:${me.userId}`;
    this.active = null;
    this.list = h('ul', { class: 'conv-list', testid: 'conversation-list' });
    const title = h('input', { placeholder: 'Title (optional)', maxlength: 200, testid: 'new-title', 'aria-label': 'New conversation title' });
    const idInput = h('input', { placeholder: 'Conversation id or link', testid: 'open-id', 'aria-label': 'Conversation id or link' });
    this.el = h(
      'nav',
      { class: 'sidebar' },
      h(
        'form',
        { class: 'stack', onsubmit: (e) => (e.preventDefault(), void this.create(title)) },
        h('h2', {}, 'Conversations'),
        title,
        h('button', { class: 'btn btn-primary', type: 'submit', testid: 'new-conversation' }, 'New conversation'),
      ),
      this.list,
      h(
        'form',
        { class: 'stack', onsubmit: (e) => (e.preventDefault(), this.openTyped(idInput)) },
        h('h3', {}, 'Open shared'),
        idInput,
        h('button', { class: 'btn', type: 'submit', testid: 'open-conversation' }, 'Open'),
      ),
    );
  }

  entries() {
    try {
      const v = JSON.parse(localStorage.getItem(this.key) || '[]');
      return Array.isArray(v) ? v : [];
    } catch {
      return [];
    }
  }

  /** Puts a conversation at the top of the list (or updates its title). */
  remember(id, title) {
    const rest = this.entries().filter((e) => e.id !== id);
    const old = this.entries().find((e) => e.id === id);
    localStorage.setItem(this.key, JSON.stringify([{ id, title: title || (old && old.title) || '' }, ...rest].slice(0, MAX)));
    this.render();
  }

  setActive(id) {
    this.active = id;
    this.render();
  }

  async load() {
    this.render();
    try {
      const tasks = await this.api.allTasks();
      const known = new Set(this.entries().map((e) => e.id));
      const extra = [...new Set((tasks || []).map((t) => t.conversationId))].filter((id) => id && !known.has(id));
      if (extra.length) {
        localStorage.setItem(this.key, JSON.stringify([...this.entries(), ...extra.map((id) => ({ id, title: '' }))].slice(0, MAX)));
        this.render();
      }
    } catch (e) {
      // No registry route on this gateway (404), or no tasks: the local list is all there is.
      if (!(e instanceof ApiError)) throw e;
    }
  }

  render() {
    fill(
      this.list,
      this.entries().map((e) =>
        h(
          'li',
          {},
          h(
            'a',
            { href: `#/c/${encodeURIComponent(e.id)}`, class: e.id === this.active ? 'active' : '', testid: 'conversation-link', dataset: { id: e.id } },
            h('span', { class: 'conv-title' }, e.title || 'Untitled'),
            h('span', { class: 'conv-id' }, e.id.slice(0, 8)),
          ),
        ),
      ),
    );
  }

  async create(titleInput) {
    try {
      const { id } = await this.api.createConversation(titleInput.value.trim());
      this.remember(id, titleInput.value.trim());
      titleInput.value = '';
      this.open(id);
    } catch (e) {
      toast(`Could not create the conversation: ${e.message}`, 'error');
    }
  }

  openTyped(input) {
    const raw = input.value.trim();
    const m = /#\/c\/([^/?#]+)/.exec(raw);
    const id = m ? decodeURIComponent(m[1]) : raw;
    if (!id) return;
    input.value = '';
    this.open(id);
  }
}
