// Sign-in: paste a token (JWT with sub and tenant), or, in development, get one from the gateway.
import { claimsOf } from './api.js';
import { fill, h } from './dom.js';

async function devTokensEnabled() {
  try {
    const r = await fetch('/console/dev-token', { cache: 'no-store' });
    return r.ok;
  } catch {
    return false;
  }
}

export function renderLogin(root, { onToken, message }) {
  const error = h('p', { class: 'form-error', testid: 'login-error', role: 'alert' }, message || '');
  const tokenInput = h('textarea', { id: 'token', rows: 5, spellcheck: 'false', autocomplete: 'off', placeholder: 'eyJhbGciOi…', testid: 'token-input' });
  const use = (token) => {
    try {
      claimsOf(token);
    } catch (e) {
      error.textContent = `That token cannot be used: ${e.message}.`;
      return;
    }
    onToken(token);
  };
  const paste = h(
    'form',
    { class: 'card login-card', onsubmit: (e) => (e.preventDefault(), use(tokenInput.value.trim())) },
    h('h1', {}, 'Handplane console'),
    h('p', { class: 'muted' }, 'Sign in with a bearer token (a JWT with the claims sub and tenant) issued for this gateway.'),
    h('label', { for: 'token' }, 'Token'),
    tokenInput,
    h('button', { class: 'btn btn-primary', type: 'submit', testid: 'sign-in' }, 'Sign in'),
    error,
  );
  const dev = h('div', { class: 'dev-slot' });
  fill(root, h('div', { class: 'login' }, paste, dev));

  void devTokensEnabled().then((on) => {
    if (!on) return;
    const user = h('input', { id: 'dev-user', value: 'alice', autocomplete: 'off', testid: 'dev-user' });
    const tenant = h('input', { id: 'dev-tenant', value: 'acme', autocomplete: 'off', testid: 'dev-tenant' });
    const devError = h('p', { class: 'form-error', role: 'alert' });
    const submit = async (e) => {
      e.preventDefault();
      devError.textContent = '';
      try {
        const r = await fetch('/console/dev-token', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ userId: user.value.trim(), tenant: tenant.value.trim() }) });
        const body = await r.json();
        if (!r.ok) throw new Error(body.error ? body.error.message : `HTTP ${r.status}`);
        use(body.token);
      } catch (err) {
        devError.textContent = `No token: ${err.message}`;
      }
    };
    fill(
      dev,
      h(
        'form',
        { class: 'card login-card dev', onsubmit: submit },
        h('h2', {}, 'Development sign-in'),
        h('p', { class: 'muted' }, 'This gateway is not in production: it can sign a token for any user. Production gateways refuse this.'),
        h('div', { class: 'row' }, h('label', { for: 'dev-user' }, 'User', user), h('label', { for: 'dev-tenant' }, 'Tenant', tenant)),
        h('button', { class: 'btn', type: 'submit', testid: 'dev-sign-in' }, 'Get a development token'),
        devError,
      ),
    );
  });
}
