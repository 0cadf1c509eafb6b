// Small DOM helpers. Text always goes in as text nodes (never innerHTML), so event data can't inject markup.

/** Creates an element: h('div', {class: 'x', testid: 'y', onclick: f}, 'text', child, [more]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'testid') el.setAttribute('data-testid', v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const TERMINAL = new Set(['succeeded', 'failed', 'cancelled', 'timed_out', 'lost']);

/** True for a task status that will not change again. */
export const isTerminal = (status) => TERMINAL.has(status);

/** What the status chip of a task says: `backgrounded` is `running` with `background` set. */
export const taskChip = (t) => (t.status === 'running' && t.background ? 'backgrounded' : t.status);

const LABELS = { timed_out: 'timed out', result_pending: 'result pending' };

/** A status chip; its class gives the colour, its text the state. */
export function chip(state, testid, title) {
  return h('span', { class: `chip chip-${state}`, testid, title, dataset: { state } }, LABELS[state] ?? state);
}

/** A random id that works outside secure contexts too (crypto.randomUUID needs one). */
export function uuid() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const x = [...b].map((v) => v.toString(16).padStart(2, '0')).join('');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

/** "14:03:22" for an ISO time (local clock). */
export const timeOf = (iso) => (iso ? new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' }) : '');

/** Shows a short message at the bottom of the page. */
export function toast(text, tone = 'info') {
  const box = document.getElementById('toasts');
  if (!box) return;
  const t = h('div', { class: `toast toast-${tone}`, role: 'status', testid: 'toast' }, text);
  box.append(t);
  setTimeout(() => t.remove(), tone === 'error' ? 8000 : 4000);
}

/** Calls `f` at most once per animation frame, however often `schedule` is called. */
export function framed(f) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      f();
    });
  };
}
