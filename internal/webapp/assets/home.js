// The home view: compose, the feed, and what the live stream brings.
import { describe } from './api.js';
import { el, notice } from './ui.js';
import { pager, pages, postEl } from './list.js';
import { liveStream } from './live.js';

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
  // The stream resumes after the newest post on the first page, so
  // nothing published between the page and the stream is missed.
  const item = (p) => postEl(s, p);
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
      // The stream may have brought the post before its answer came.
      unpend(p.id);
      prepend(feed, [p], item);
      notice('');
    } catch (e) {
      notice(describe(e), 'error');
    } finally {
      btn.disabled = false;
    }
  });

  // The live stream fills pending; the pill shows how many wait.
  const pending = [];
  const pill = el('button', { type: 'button', class: 'pill', id: 'pill', hidden: true });
  const showPill = () => {
    pill.hidden = pending.length === 0;
    pill.textContent = pending.length === 1 ? '1 new post' : pending.length + ' new posts';
  };
  const unpend = (id) => {
    const i = pending.findIndex((q) => q.id === id);
    if (i >= 0) pending.splice(i, 1);
    showPill();
  };
  pill.addEventListener('click', () => {
    prepend(feed, pending.splice(0).reverse(), item);
    showPill();
  });
  const live = liveStream(v.call, {
    post: (p) => {
      if (feed.shown.has(p.id) || pending.some((q) => q.id === p.id)) return;
      // One's own post is no news to its author: it goes on the page
      // (this tab's publish may not have had its answer yet; another
      // tab's shows here at once), never into the pill.
      if (p.author_id === s.me) {
        prepend(feed, [p], item);
        return;
      }
      pending.push(p);
      showPill();
    },
    update: (p) => {
      // An edit: the post is shown again as it is now, where it is.
      const i = pending.findIndex((q) => q.id === p.id);
      if (i >= 0) pending[i] = p;
      for (const a of feed.list.querySelectorAll('article[data-id="' + p.id + '"]')) a.replaceWith(item(p));
    },
    remove: (id) => {
      unpend(id);
      const a = feed.list.querySelector('article[data-id="' + id + '"]');
      if (a) a.closest('li').remove();
    },
    reset: () => {
      pending.length = 0;
      pill.hidden = false;
      pill.textContent = 'Many new posts: reload';
      pill.onclick = () => location.reload();
    },
  });
  v.onStop(live.stop);
  const who = el('input', { id: 'goto-id', placeholder: 'a user id', inputmode: 'numeric', pattern: '[0-9]+', required: true, 'aria-label': 'User id' });
  const go = el('form', { class: 'form-row goto', id: 'goto' }, who, el('button', { type: 'submit' }, "Open a user's page"));
  go.addEventListener('submit', (ev) => {
    ev.preventDefault();
    v.go('/users/' + who.value.trim());
  });
  v.show(el('h1', { class: 'title' }, 'Home'), form, go, pill, feed.box);
  feed.more();
}

// randomKey is 128 random bits in hex. (crypto.randomUUID exists only in
// secure contexts, and feedd may be served over plain HTTP on a LAN.)
function randomKey() {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// prepend puts posts (newest first) above the list's first entry without
// moving what the reader is looking at: when the reader has scrolled
// down, the page scrolls by the height added. item renders a post.
function prepend(pg, items, item) {
  const fresh = items.filter((p) => !pg.shown.has(p.id));
  if (!fresh.length) return;
  const before = document.documentElement.scrollHeight;
  const atTop = window.scrollY < 10;
  const lis = fresh.map((p) => {
    pg.shown.add(p.id);
    return el('li', { class: 'fresh' }, item(p));
  });
  pg.list.prepend(...lis);
  if (!atTop) window.scrollBy(0, document.documentElement.scrollHeight - before);
  const end = pg.box.querySelector('.end');
  if (end.textContent.startsWith('Your feed is empty')) end.textContent = 'That is all.';
}
