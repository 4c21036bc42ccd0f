// The sign-in view, and the token a console hands to a tab it opened.
import { client, describe, APIError } from './api.js';
import { el, notice } from './ui.js';

const ADMIN = 'feedd.admin'; // the console's key: an admin token pasted here goes there

// userOf returns the user id a user token speaks for (the JWT's sub), or
// null for anything that is not shaped as a user token.
export function userOf(token) {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const claims = JSON.parse(atob(parts[1].replace(/-/g, '+').replace(/_/g, '/')));
    return typeof claims.sub === 'string' && /^[0-9]+$/.test(claims.sub) ? claims.sub : null;
  } catch (e) {
    return null;
  }
}

// signInView shows the sign-in form in v (see app.js); signIn(token)
// signs in with a user token, and rejects with why it cannot.
export function signInView(v, signIn, message) {
  const input = el('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'off', required: true, placeholder: 'eyJhbGciOi…' });
  const form = el('form', { class: 'card signin', id: 'signin' },
    el('h1', {}, 'Sign in to feedd'),
    el('label', { for: 'token' }, 'Your user token'),
    input,
    el('p', { class: 'hint' }, 'An admin mints one with POST /v1/users/{id}/tokens, or opens the app as a user from the ',
      el('a', { href: '/ops' }, 'console'), '. It stays in this tab only (sessionStorage) and leaves when you sign out.'),
    el('button', { class: 'primary', type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    try {
      if (userOf(t)) {
        await signIn(t);
        return;
      }
      // Not a user token. The admin token belongs to the console, but
      // only feedd can tell the admin token from a mistyped one: an
      // admin-only call says which.
      await client(t)('GET', '/v1/admin/degradation');
      sessionStorage.setItem(ADMIN, t);
      location.assign('/ops');
    } catch (e) {
      // feedd's 401 says what is wrong with the token (malformed, a
      // signature that does not verify, expired, revoked…).
      notice(e instanceof APIError && e.status === 401 ? 'That token is not accepted: ' + e.message + '.' : describe(e), 'error');
    }
  });
  v.show(form);
  if (message) notice(message, 'error');
  input.focus();
}

// handoff takes a token from the console that opened this tab: the tab
// says it is ready to its opener, which answers with the token by
// postMessage, so the token never appears in a URL. Resolves to the token,
// or null when no console answers.
export function handoff() {
  if (!window.opener) return Promise.resolve(null);
  return new Promise((resolve) => {
    const done = (tok) => {
      window.removeEventListener('message', onMsg);
      clearTimeout(timer);
      resolve(tok);
    };
    const onMsg = (ev) => {
      if (ev.origin !== location.origin || ev.source !== window.opener) return;
      if (ev.data && ev.data.type === 'feedd:token' && typeof ev.data.token === 'string') done(ev.data.token);
    };
    const timer = setTimeout(() => done(null), 2000);
    window.addEventListener('message', onMsg);
    try {
      window.opener.postMessage({ type: 'feedd:ready' }, location.origin);
    } catch (e) {
      done(null);
    }
  });
}
