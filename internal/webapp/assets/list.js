// What the app's views share: the signed-in session, the paged list, and
// how a post and a user show in it.
import { client, describe, isAbort, APIError } from './api.js';
import { el, timeEl, confirmDialog, notice } from './ui.js';

const PAGE = 20;

// session is a signed-in person: their id (the token's sub), the API as
// them, and the names of the users seen, which every view of the session
// shares (asked once each).
export function session(token, me) {
  const call = client(token);
  const names = new Map(); // user id → Promise of the user's name
  return {
    me,
    call,
    // scoped is the API as them for one view: its calls end when the
    // view does.
    scoped: (signal) => client(token, signal),
    nameOf(id) {
      if (!names.has(id)) {
        names.set(id, call('GET', '/v1/users/' + id).then((u) => u.name, () => 'user ' + id));
      }
      return names.get(id);
    },
  };
}

function userLink(s, id) {
  const a = el('a', { href: '/users/' + id, 'data-link': true, class: 'author' }, 'user ' + id);
  s.nameOf(id).then((n) => { a.textContent = n; });
  return a;
}

// toggleButton is a post's Like or Repost button: pressed when the reader
// likes (reposts) it, with the post's count, toggled by PUT and DELETE of
// /v1/posts/{id}/{kind}, whose answer gives the new count and state.
function toggleButton(s, p, kind, on, off) {
  const [countKey, mineKey] = kind === 'like' ? ['like_count', 'liked_by_me'] : ['repost_count', 'reposted_by_me'];
  const b = el('button', { type: 'button', class: kind, 'aria-pressed': String(!!p[mineKey]), title: kind === 'like' ? 'Like' : 'Repost' });
  const show = (count, mine) => {
    b.setAttribute('aria-pressed', String(mine));
    // No count when feedd leaves it out (switch L1): a 0 would be wrong.
    b.replaceChildren(el('span', { 'aria-hidden': 'true' }, mine ? on : off), count === undefined ? null : ' ', count === undefined ? null : el('span', { class: 'count' }, String(count)));
  };
  show(p[countKey], p[mineKey]);
  b.addEventListener('click', async () => {
    const mine = b.getAttribute('aria-pressed') === 'true';
    b.disabled = true;
    try {
      const r = await s.call(mine ? 'DELETE' : 'PUT', '/v1/posts/' + p.id + '/' + kind);
      show(r[countKey], r[mineKey]);
    } catch (e) {
      notice(describe(e), 'error');
    } finally {
      b.disabled = false;
    }
  });
  return b;
}

// postEl shows a post. Its content is set as text (textContent), never as
// markup: "<img src=x onerror=…>" shows as those characters.
export function postEl(s, p) {
  // A repost: "bob reposted" above its original, which has the buttons.
  if (p.repost_of) {
    return el('article', { class: 'repost', 'data-id': p.id },
      el('header', { class: 'reposted-by' }, '↻ ', userLink(s, p.author_id), ' reposted · ', timeEl(p.created_at)),
      postEl(s, p.repost_of));
  }
  const body = el('p', { class: 'content' });
  body.textContent = p.content;
  const actions = el('footer', {}, toggleButton(s, p, 'like', '♥', '♡'), toggleButton(s, p, 'repost', '↻', '↻'),
    // Reply opens the post's thread, its reply form ready.
    el('a', { href: '/posts/' + p.id + '#reply', 'data-link': true, class: 'reply', title: 'Reply' }, 'Reply',
      p.reply_count ? el('span', { class: 'count' }, ' ' + p.reply_count) : null),
    el('a', { href: '/posts/' + p.id, 'data-link': true, class: 'likers' }, 'likers'));
  if (p.author_id === s.me) {
    actions.append(el('button', {
      type: 'button', class: 'delete', onclick: async (ev) => {
        if (!(await confirmDialog('Delete this post? It leaves every feed.', 'Delete'))) return;
        try {
          await s.call('DELETE', '/v1/posts/' + p.id);
          ev.target.closest('article').remove();
        } catch (e) {
          notice(describe(e), 'error');
        }
      },
    }, 'Delete'));
  }
  return el('article', { class: 'post', 'data-id': p.id },
    el('header', {}, userLink(s, p.author_id), ' · ',
      el('a', { href: '/posts/' + p.id, 'data-link': true, class: 'when' }, timeEl(p.created_at)),
      p.edited_at ? el('span', { class: 'edited' }, ' · edited') : null,
      p.in_reply_to_id ? el('a', { href: '/posts/' + p.in_reply_to_id, 'data-link': true, class: 'in-reply-to' }, ' · a reply') : null,
      // Only the author sees a post's weight; the default, 1, goes unsaid.
      p.weight !== undefined && p.weight !== 1 ? el('span', { class: 'weight' }, ' · weight ' + p.weight) : null),
    body, actions);
}

export function userItem(u) {
  return el('div', { class: 'user' }, el('a', { href: '/users/' + u.id, 'data-link': true }, u.name),
    u.handle ? el('span', { class: 'handle' }, ' @' + u.handle) : null,
    el('span', { class: 'hint' }, ' ' + u.follower_count + (u.follower_count === 1 ? ' follower' : ' followers')));
}

// pages returns load(cursor) for the pager: a page of path, with call.
export function pages(call, path) {
  return (cursor) => call('GET', path + (path.includes('?') ? '&' : '?') + 'limit=' + PAGE + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
}

// pager shows a list that pages by cursor as the reader scrolls to its
// end. load(cursor) returns a page; item renders one entry; onfirst, if
// given, sees the first page's items. Entries already shown (by id) are
// skipped, so a page that overlaps another shows nothing twice. Returns
// the list element, a Set of shown ids, more() and stop(); once stopped
// it loads nothing more, and a page that comes after is dropped.
export function pager(load, item, empty, onfirst) {
  const list = el('ol', { class: 'list' });
  const end = el('p', { class: 'end', 'data-state': 'loading' }, 'Loading…');
  const box = el('div', {}, list, end);
  const shown = new Set();
  let cursor = '';
  let busy = false;
  let done = false;
  let first = true;
  let stopped = false;
  const more = async () => {
    if (busy || done || stopped) return;
    busy = true;
    end.dataset.state = 'loading';
    end.textContent = 'Loading…';
    try {
      const page = await load(cursor);
      if (stopped) return;
      for (const it of page.items) {
        if (shown.has(it.id)) continue;
        shown.add(it.id);
        list.append(el('li', {}, item(it)));
      }
      cursor = page.next_cursor;
      done = !cursor;
      end.textContent = done ? (shown.size === 0 ? empty : 'That is all.') : '';
      end.dataset.state = done ? 'done' : 'more';
      if (first && onfirst) onfirst(page.items);
      first = false;
    } catch (e) {
      if (stopped || isAbort(e)) return;
      end.textContent = describe(e);
      end.dataset.state = 'error';
      // Try again after a pause (the one a 429 asks for, else 2 s), not
      // at once: a server that fails would be asked again at every frame.
      const wait = e instanceof APIError && e.status === 429 ? (e.retryAfter || 1) : 2;
      setTimeout(look, wait * 1000);
      return;
    } finally {
      busy = false;
    }
    look();
  };
  // look has the observer report where the end is now, and so load the
  // next page if it is on screen (or near). The observer reports only
  // changes: a reader who scrolled while a page loaded may have had the
  // end on screen before the page came and again after, and a tall
  // window keeps it there; neither would report anything.
  const look = () => {
    if (done || stopped) return;
    io.unobserve(end);
    io.observe(end);
  };
  const io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) more(); }, { rootMargin: '400px' });
  io.observe(end);
  const stop = () => {
    stopped = true;
    io.disconnect();
  };
  return { box, list, shown, more, stop };
}
