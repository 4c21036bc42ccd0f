// The feedd app: sign in with a user token, then the home feed (live),
// users' pages, posts' pages and the most liked posts. Routes are paths
// (history API); the server answers the app's page for each of them, so
// deep links and reloads work.
import { client, describe, APIError } from './api.js';
import { el, timeEl, refreshTimes, confirmDialog, notice } from './ui.js';

const TOKEN = 'feedd.token';
const ADMIN = 'feedd.admin'; // the console's key: an admin token pasted here goes there
const PAGE = 20;

let call = null; // the API as the signed-in user
let me = null; // the signed-in user's id
let view = null; // the current view's cleanup, if any
const names = new Map(); // user id → Promise of the user's name

const main = document.getElementById('view');
const nav = document.getElementById('nav');

// ---- sign-in ----

// userOf returns the user id a user token speaks for (the JWT's sub), or
// null for anything that is not a user token (the admin token).
function userOf(token) {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const claims = JSON.parse(atob(parts[1].replace(/-/g, '+').replace(/_/g, '/')));
    return typeof claims.sub === 'string' && /^[0-9]+$/.test(claims.sub) ? claims.sub : null;
  } catch (e) {
    return null;
  }
}

async function signIn(token) {
  const id = userOf(token);
  if (!id) throw new Error('not a user token');
  const c = client(token);
  await c('GET', '/v1/users/' + id); // the token works, and its user exists
  sessionStorage.setItem(TOKEN, token);
  call = c;
  me = id;
}

function signOut() {
  stopView();
  sessionStorage.clear();
  call = null;
  me = null;
  names.clear();
  history.pushState(null, '', '/');
  render();
}

function showSignIn(message) {
  nav.hidden = true;
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
    if (!userOf(t)) {
      // The admin token belongs to the console.
      sessionStorage.setItem(ADMIN, t);
      location.assign('/ops');
      return;
    }
    try {
      await signIn(t);
      notice('');
      render();
    } catch (e) {
      notice(describe(e), 'error');
    }
  });
  main.replaceChildren(form);
  if (message) notice(message, 'error');
  input.focus();
}

// handoff takes a token from the console that opened this tab: the tab
// says it is ready to its opener, which answers with the token by
// postMessage, so the token never appears in a URL. Resolves to the token,
// or null when no console answers.
function handoff() {
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

// ---- names and posts ----

function nameOf(id) {
  if (!names.has(id)) {
    names.set(id, call('GET', '/v1/users/' + id).then((u) => u.name, () => 'user ' + id));
  }
  return names.get(id);
}

function userLink(id) {
  const a = el('a', { href: '/users/' + id, 'data-link': true, class: 'author' }, 'user ' + id);
  nameOf(id).then((n) => { a.textContent = n; });
  return a;
}

function likeButton(p) {
  const b = el('button', { type: 'button', class: 'like', 'aria-pressed': String(!!p.liked_by_me), title: 'Like' });
  const show = (count, liked) => {
    b.setAttribute('aria-pressed', String(liked));
    // No count when feedd leaves it out (switch L1): a 0 would be wrong.
    b.replaceChildren(el('span', { 'aria-hidden': 'true' }, liked ? '♥' : '♡'), count === undefined ? null : ' ', count === undefined ? null : el('span', { class: 'count' }, String(count)));
  };
  show(p.like_count, p.liked_by_me);
  b.addEventListener('click', async () => {
    const liked = b.getAttribute('aria-pressed') === 'true';
    b.disabled = true;
    try {
      const r = await call(liked ? 'DELETE' : 'PUT', '/v1/posts/' + p.id + '/like');
      show(r.like_count, r.liked_by_me);
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
function postEl(p) {
  const body = el('p', { class: 'content' });
  body.textContent = p.content;
  const actions = el('footer', {}, likeButton(p),
    el('a', { href: '/posts/' + p.id, 'data-link': true, class: 'likers' }, 'likers'));
  if (p.author_id === me) {
    actions.append(el('button', {
      type: 'button', class: 'delete', onclick: async (ev) => {
        if (!(await confirmDialog('Delete this post? It leaves every feed.', 'Delete'))) return;
        try {
          await call('DELETE', '/v1/posts/' + p.id);
          ev.target.closest('article').remove();
        } catch (e) {
          notice(describe(e), 'error');
        }
      },
    }, 'Delete'));
  }
  return el('article', { class: 'post', 'data-id': p.id },
    el('header', {}, userLink(p.author_id), ' · ',
      el('a', { href: '/posts/' + p.id, 'data-link': true, class: 'when' }, timeEl(p.created_at)),
      p.edited_at ? el('span', { class: 'edited' }, ' · edited') : null),
    body, actions);
}

// pager shows a list that pages by cursor as the reader scrolls to its
// end. load(cursor) returns a page; item renders one entry; onfirst, if
// given, sees the first page's items. Entries already
// shown (by id) are skipped, so a page that overlaps another shows nothing
// twice. Returns the list element, a Set of shown ids and stop().
function pager(load, item, empty, onfirst) {
  const list = el('ol', { class: 'list' });
  const end = el('p', { class: 'end', 'data-state': 'loading' }, 'Loading…');
  const box = el('div', {}, list, end);
  const shown = new Set();
  let cursor = '';
  let busy = false;
  let done = false;
  let first = true;
  const more = async () => {
    if (busy || done) return;
    busy = true;
    end.dataset.state = 'loading';
    end.textContent = 'Loading…';
    try {
      const page = await load(cursor);
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
    if (done) return;
    io.unobserve(end);
    io.observe(end);
  };
  const io = new IntersectionObserver((es) => { if (es.some((e) => e.isIntersecting)) more(); }, { rootMargin: '400px' });
  io.observe(end);
  return { box, list, shown, more, stop: () => io.disconnect() };
}

function posts(path) {
  return (cursor) => call('GET', path + (path.includes('?') ? '&' : '?') + 'limit=' + PAGE + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
}

// ---- views ----

function homeView() {
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
  const feed = pager(posts('/v1/me/feed'), postEl, 'Your feed is empty. Follow people from their pages, or find posts on Top.',
    (items) => live.start(items.length ? items[0].id : null));
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
      const p = await call('POST', '/v1/posts', { content }, { 'Idempotency-Key': key });
      key = null;
      text.value = '';
      count.textContent = '0 / 5000';
      prepend(feed, [p]);
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
  pill.addEventListener('click', () => {
    prepend(feed, pending.splice(0).reverse());
    showPill();
  });
  const live = liveStream({
    post: (p) => {
      if (feed.shown.has(p.id) || pending.some((q) => q.id === p.id)) return;
      pending.push(p);
      showPill();
    },
    remove: (id) => {
      const i = pending.findIndex((q) => q.id === id);
      if (i >= 0) pending.splice(i, 1);
      showPill();
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
  const who = el('input', { id: 'goto-id', placeholder: 'a user id', inputmode: 'numeric', pattern: '[0-9]+', required: true, 'aria-label': 'User id' });
  const go = el('form', { class: 'form-row goto', id: 'goto' }, who, el('button', { type: 'submit' }, "Open a user's page"));
  go.addEventListener('submit', (ev) => {
    ev.preventDefault();
    history.pushState(null, '', '/users/' + who.value.trim());
    render();
  });
  main.replaceChildren(el('h1', { class: 'title' }, 'Home'), form, go, pill, feed.box);
  feed.more();
  return () => { feed.stop(); live.stop(); };
}

// randomKey is 128 random bits in hex. (crypto.randomUUID exists only in
// secure contexts, and feedd may be served over plain HTTP on a LAN.)
function randomKey() {
  return [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

// prepend puts posts (newest first) above the list's first entry without
// moving what the reader is looking at: when the reader has scrolled
// down, the page scrolls by the height added.
function prepend(pg, items) {
  const fresh = items.filter((p) => !pg.shown.has(p.id));
  if (!fresh.length) return;
  const before = document.documentElement.scrollHeight;
  const atTop = window.scrollY < 10;
  const lis = fresh.map((p) => {
    pg.shown.add(p.id);
    return el('li', { class: 'fresh' }, postEl(p));
  });
  pg.list.prepend(...lis);
  if (!atTop) window.scrollBy(0, document.documentElement.scrollHeight - before);
  const end = pg.box.querySelector('.end');
  if (end.textContent.startsWith('Your feed is empty')) end.textContent = 'That is all.';
}

// liveStream keeps an EventSource on /v1/me/feed/stream. A ticket opens one
// stream only, and EventSource would reconnect to the same URL by itself,
// so on any error the stream is closed and reopened with a fresh ticket
// and the last post id seen (?last_event_id=), after a growing pause.
function liveStream(on) {
  let es = null;
  let last = null;
  let stopped = false;
  let wait = 1000;
  let timer = null;
  const again = (ms) => {
    if (stopped) return;
    timer = setTimeout(connect, ms);
    wait = Math.min(wait * 2, 30000);
  };
  async function connect() {
    if (stopped) return;
    let tk;
    try {
      tk = await call('POST', '/v1/me/feed/stream-tickets');
    } catch (e) {
      if (e instanceof APIError && e.status === 401) {
        notice(describe(e), 'error'); // the token is gone: retrying cannot help
        return;
      }
      again(e.retryAfter ? e.retryAfter * 1000 : wait);
      return;
    }
    if (stopped) return;
    let url = '/v1/me/feed/stream?ticket=' + encodeURIComponent(tk.ticket);
    if (last) url += '&last_event_id=' + encodeURIComponent(last);
    es = new EventSource(url);
    es.addEventListener('open', () => { wait = 1000; document.body.dataset.live = 'on'; });
    es.addEventListener('post', (ev) => {
      last = ev.lastEventId || last;
      on.post(JSON.parse(ev.data));
    });
    es.addEventListener('delete', (ev) => on.remove(JSON.parse(ev.data).id));
    es.addEventListener('reset', (ev) => {
      last = ev.lastEventId || last;
      on.reset();
    });
    es.addEventListener('error', () => {
      es.close();
      document.body.dataset.live = 'off';
      again(wait);
    });
  }
  return {
    start(from) {
      last = from;
      connect();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      if (es) es.close();
      document.body.dataset.live = 'off';
    },
  };
}

function topView() {
  const pick = el('select', { id: 'window', 'aria-label': 'Window' },
    el('option', { value: '24h' }, 'last 24 hours'), el('option', { value: '7d' }, 'last 7 days'), el('option', { value: '720h' }, 'last 30 days'));
  const box = el('div', {});
  let pg = null;
  const load = () => {
    if (pg) pg.stop();
    pg = pager(posts('/v1/posts/top?window=' + pick.value), postEl, 'No liked posts in this window yet.');
    box.replaceChildren(pg.box);
    pg.more();
  };
  pick.addEventListener('change', load);
  main.replaceChildren(el('div', { class: 'row' }, el('h1', { class: 'title' }, 'Most liked'), pick), box);
  load();
  return () => pg && pg.stop();
}

function userItem(u) {
  return el('div', { class: 'user' }, el('a', { href: '/users/' + u.id, 'data-link': true }, u.name),
    el('span', { class: 'hint' }, ' ' + u.follower_count + (u.follower_count === 1 ? ' follower' : ' followers')));
}

// isFollowing pages the signed-in user's following list (ascending ids)
// until it passes id.
async function isFollowing(id) {
  const want = BigInt(id);
  let cursor = '';
  for (;;) {
    const page = await call('GET', '/v1/users/' + me + '/following?limit=100' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''));
    for (const u of page.items) {
      if (BigInt(u.id) === want) return true;
      if (BigInt(u.id) > want) return false;
    }
    if (!page.next_cursor) return false;
    cursor = page.next_cursor;
  }
}

// fetchOrSay returns what GET path answers, or null once the page says
// why there is nothing to show.
async function fetchOrSay(path) {
  try {
    return await call('GET', path);
  } catch (e) {
    main.replaceChildren(el('p', { class: 'card empty' }, describe(e)));
    return null;
  }
}

async function userView(id) {
  const u = await fetchOrSay('/v1/users/' + id);
  if (!u) return null;
  const followers = el('span', { class: 'count', id: 'followers' }, String(u.follower_count));
  const followersWord = el('span', {}, u.follower_count === 1 ? ' follower' : ' followers');
  const following = el('span', { class: 'count', id: 'following' }, String(u.following_count));
  const head = el('section', { class: 'card profile' }, el('h1', {}, u.name),
    el('p', { class: 'hint' }, 'user ' + u.id + (u.id === me ? ' · you' : '')));
  const tabs = el('nav', { class: 'tabs' });
  const box = el('div', {});
  let pg = null;
  const show = (which) => {
    if (pg) pg.stop();
    for (const b of tabs.children) b.setAttribute('aria-selected', String(b.dataset.tab === which));
    if (which === 'posts') pg = pager(posts('/v1/users/' + id + '/posts'), postEl, u.name + ' has not posted yet.');
    else pg = pager(posts('/v1/users/' + id + '/' + which), userItem, which === 'followers' ? 'No followers yet.' : 'Follows nobody yet.');
    box.replaceChildren(pg.box);
    pg.more();
  };
  tabs.append(
    el('button', { type: 'button', 'data-tab': 'posts', onclick: () => show('posts') }, 'Posts'),
    el('button', { type: 'button', 'data-tab': 'followers', onclick: () => show('followers') }, followers, followersWord),
    el('button', { type: 'button', 'data-tab': 'following', onclick: () => show('following') }, following, ' following'));
  if (u.id !== me) {
    const btn = el('button', { type: 'button', class: 'primary follow', id: 'follow', disabled: true }, '…');
    let on = false;
    const label = () => { btn.textContent = on ? 'Unfollow' : 'Follow'; btn.setAttribute('aria-pressed', String(on)); };
    isFollowing(id).then((f) => { on = f; label(); btn.disabled = false; }, (e) => notice(describe(e), 'error'));
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        await call(on ? 'DELETE' : 'PUT', '/v1/me/following/' + id);
        on = !on;
        label();
        const fresh = await call('GET', '/v1/users/' + id);
        followers.textContent = String(fresh.follower_count);
        followersWord.textContent = fresh.follower_count === 1 ? ' follower' : ' followers';
      } catch (e) {
        notice(describe(e), 'error');
      } finally {
        btn.disabled = false;
      }
    });
    head.append(btn);
  }
  main.replaceChildren(head, tabs, box);
  show('posts');
  return () => pg && pg.stop();
}

async function postView(id) {
  const p = await fetchOrSay('/v1/posts/' + id);
  if (!p) return null;
  const likers = pager(posts('/v1/posts/' + id + '/likes'), userItem, 'Nobody likes this post yet.');
  main.replaceChildren(el('div', { class: 'single' }, postEl(p)), el('h2', {}, 'Liked by'), likers.box);
  likers.more();
  return () => likers.stop();
}

// ---- routing ----

function stopView() {
  if (view) view();
  view = null;
}

async function render() {
  stopView();
  notice('');
  if (!call) {
    showSignIn();
    return;
  }
  nav.hidden = false;
  document.getElementById('me-link').setAttribute('href', '/users/' + me);
  const path = location.pathname;
  let m;
  for (const a of nav.querySelectorAll('a')) a.toggleAttribute('aria-current', a.getAttribute('href') === path);
  if (path === '/') view = homeView();
  else if (path === '/top') view = topView();
  else if ((m = path.match(/^\/users\/([0-9]+)$/))) view = await userView(m[1]);
  else if ((m = path.match(/^\/posts\/([0-9]+)$/))) view = await postView(m[1]);
  else main.replaceChildren(el('p', { class: 'card empty' }, 'There is no page here. ', el('a', { href: '/', 'data-link': true }, 'Home')));
  window.scrollTo(0, 0);
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest('a[data-link]');
  if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
  ev.preventDefault();
  if (a.getAttribute('href') !== location.pathname) history.pushState(null, '', a.getAttribute('href'));
  render();
});
window.addEventListener('popstate', render);
document.getElementById('signout').addEventListener('click', signOut);
setInterval(() => refreshTimes(), 30000);

async function boot() {
  const handed = await handoff();
  if (handed) {
    // A tab opened by window.open starts with a copy of its opener's
    // sessionStorage: the console's admin token has no business here.
    sessionStorage.clear();
    window.opener = null;
    sessionStorage.setItem(TOKEN, handed);
  }
  const saved = sessionStorage.getItem(TOKEN);
  if (saved) {
    try {
      await signIn(saved);
    } catch (e) {
      // A refused token goes; feedd being busy or away does not sign out.
      if (!(e instanceof APIError) || e.status === 401 || e.status === 404) sessionStorage.removeItem(TOKEN);
      render();
      notice(describe(e), 'error');
      return;
    }
  }
  render();
}
boot();
