// The console's entry: who is signed in, which conversation is open (#/c/<id>), and the shell around it.
import { Api, claimsOf } from './api.js';
import { ConversationController } from './conversation.js';
import { fill, h, toast } from './dom.js';
import { renderLogin } from './login-view.js';
import { Sidebar } from './sidebar-view.js';

const TOKEN_KEY = 'handplane.token';
const root = document.getElementById('app');
let current = null;

/** The signed-in session, or null when there is no usable token. */
function session() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (!token) return null;
  try {
    const me = claimsOf(token);
    if (me.exp && me.exp * 1000 < Date.now()) throw new Error('expired');
    return { token, me };
  } catch {
    sessionStorage.removeItem(TOKEN_KEY);
    return null;
  }
}

function signOut(message) {
  if (current) current.stop();
  current = null;
  sessionStorage.removeItem(TOKEN_KEY);
  showLogin(message);
}

function showLogin(message) {
  renderLogin(root, {
    message,
    onToken(token) {
      sessionStorage.setItem(TOKEN_KEY, token);
      start();
    },
  });
}

const conversationInHash = () => {
  const m = /^#\/c\/([^/?#]+)/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
};

function start() {
  const s = session();
  if (!s) return showLogin();
  const api = new Api(s.token, () => signOut('Your session has expired or the token was refused: sign in again.'));
  const main = h('main', { class: 'main', testid: 'main' });
  const sidebar = new Sidebar(api, s.me, (id) => (location.hash = `#/c/${encodeURIComponent(id)}`));
  const who = s.me.name ? `${s.me.name} (${s.me.userId})` : s.me.userId;
  fill(
    root,
    h(
      'header',
      { class: 'topbar' },
      h('span', { class: 'brand' }, 'Handplane'),
      h('span', { class: 'who', testid: 'whoami' }, `${who} · ${s.me.tenant}`),
      h('button', { class: 'btn btn-ghost', testid: 'sign-out', onclick: () => signOut() }, 'Sign out'),
    ),
    h('div', { class: 'shell' }, sidebar.el, main),
  );
  const open = () => {
    const id = conversationInHash();
    if (current && current.id === id) return;
    if (current) current.stop();
    current = null;
    sidebar.setActive(id);
    if (!id) {
      fill(main, h('div', { class: 'empty' }, h('h2', {}, 'No conversation open'), h('p', {}, 'Create one on the left, or open one by its id or link.')));
      return;
    }
    current = new ConversationController({ api, me: s.me, id, root: main, onTitle: (title) => sidebar.remember(id, title) });
    current.start().catch((e) => toast(`Cannot open the conversation: ${e.message}`, 'error'));
  };
  window.onhashchange = open;
  open();
  sidebar.load();
}

start();
