// The people view: a search box that finds users by handle (prefix) and
// name, as GET /v1/users/search answers (blocked users left out there).
import { describe, isAbort } from './api.js';
import { el } from './ui.js';
import { userItem } from './list.js';

// peopleView shows the search in v (see app.js); ?q= in the address fills
// it, so a search can be linked and reloaded.
export function peopleView(v) {
  const input = el('input', { id: 'people-q', type: 'search', placeholder: '@handle or name', 'aria-label': 'Find people', maxlength: 64, autocomplete: 'off' });
  const results = el('div', { id: 'people', class: 'list' });
  let seq = 0;
  const search = async () => {
    const q = input.value.trim();
    const mine = ++seq;
    history.replaceState(null, '', '/search' + (q ? '?q=' + encodeURIComponent(q) : ''));
    if (!q) {
      results.replaceChildren();
      return;
    }
    try {
      const r = await v.call('GET', '/v1/users/search?q=' + encodeURIComponent(q));
      if (mine !== seq) return; // a newer search answers instead
      results.replaceChildren(...(r.items.length ? r.items.map(userItem) : [el('p', { class: 'end' }, 'Nobody matches.')]));
    } catch (e) {
      if (!isAbort(e) && mine === seq) results.replaceChildren(el('p', { class: 'card empty' }, describe(e)));
    }
  };
  let timer = 0;
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(search, 200);
  });
  v.onStop(() => clearTimeout(timer));
  input.value = new URLSearchParams(location.search).get('q') || '';
  v.show(el('h1', { class: 'title' }, 'People'), el('form', { id: 'people-form', onsubmit: (e) => { e.preventDefault(); search(); } }, input), results);
  input.focus();
  search();
}
