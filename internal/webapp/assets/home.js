// The home view: compose, the feed, and what the live stream brings.
import { describe } from './api.js';
import { el, notice } from './ui.js';
import { pager, pages, postEl } from './list.js';
import { liveFeed } from './live.js';

// homeView shows the signed-in user's feed in v (see app.js: the view's
// session, calls, show, onStop and go).
export function homeView(v) {
  const { s } = v;
  const text = el('textarea', { id: 'compose', name: 'content', maxlength: 5000, rows: 3, placeholder: 'What is new?', required: true });
  const count = el('span', { class: 'hint' }, '0 / 5000');
  // One Idempotency-Key per draft: a click retried after a lost answer
  // publishes once; an edited draft is another post and gets a new key.
  let key = null;
  text.addEventListener('input', () => {
    count.textContent = [...text.value].length + ' / 5000';
    key = null;
  });
  const item = (p) => postEl(s, p);
  const live = liveFeed(v, () => feed, item, '');
  const feed = pager(pages(v.call, '/v1/me/feed'), item, 'Your feed is empty. Follow people from their pages, or find posts on Top.',
    (items) => live.start(items.length ? items[0].id : null));
  v.onStop(feed.stop);
  const form = el('form', { class: 'card compose' }, text,
    el('div', { class: 'row' }, count, el('button', { class: 'primary', type: 'submit' }, 'Post')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const content = text.value;
    if (!content.trim()) return;
    const btn = form.querySelector('button');
    btn.disabled = true;
    try {
      key = key || randomKey();
      // Not v.call: a publish goes through even if the reader moves on.
      const p = await s.call('POST', '/v1/posts', { content }, { 'Idempotency-Key': key });
      key = null;
      text.value = '';
      count.textContent = '0 / 5000';
      live.published(p);
      notice('');
    } catch (e) {
      notice(describe(e), 'error');
    } finally {
      btn.disabled = false;
    }
  });

  const who = el('input', { id: 'goto-id', placeholder: 'a user id', inputmode: 'numeric', pattern: '[0-9]+', required: true, 'aria-label': 'User id' });
  const go = el('form', { class: 'form-row goto', id: 'goto' }, who, el('button', { type: 'submit' }, "Open a user's page"));
  go.addEventListener('submit', (ev) => {
    ev.preventDefault();
    v.go('/users/' + who.value.trim());
  });
  v.show(el('h1', { class: 'title' }, 'Home'), form, go, repliesRule(v), live.pill, feed.box);
  feed.more();
}

// repliesRule is the reader's choice of which replies its feed shows
// (GET/PUT /v1/me/settings); a change reloads the feed under the new rule.
function repliesRule(v) {
  const rules = [['following', 'Replies: to people I follow'], ['all', 'Replies: all'], ['none', 'Replies: threads only']];
  const pick = el('select', { id: 'home-replies', 'aria-label': 'Which replies the feed shows' },
    rules.map(([value, label]) => el('option', { value }, label)));
  pick.disabled = true;
  v.call('GET', '/v1/me/settings').then((st) => {
    pick.value = st.home_replies;
    pick.disabled = false;
  }, () => {}); // the view ended, or no settings: the default stays shown
  pick.addEventListener('change', async () => {
    pick.disabled = true;
    try {
      await v.call('PUT', '/v1/me/settings', { home_replies: pick.value });
      v.go('/'); // the home view again, its feed read under the new rule
    } catch (e) {
      notice(describe(e), 'error');
      pick.disabled = false;
    }
  });
  return el('div', { class: 'form-row' }, pick);
}

// randomKey is 128 random bits in hex. (crypto.randomUUID exists only in
// secure contexts, and feedd may be served over plain HTTP on a LAN.)
function randomKey() {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}
