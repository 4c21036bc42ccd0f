// The feedd app: sign in with a user token, then the home feed (live),
// users' pages, posts' pages and the most liked posts, each view in a
// module of its own. Routes are paths (history API); the server answers
// the app's page for each of them, so deep links and reloads work.
//
// This module signs in and out and routes. Each navigation starts a view
// with an AbortController of its own: the next navigation aborts it, which
// ends its API calls, stops its pagers and its stream (onStop), and keeps
// it from showing anything (show). So a slow view that answers late can
// never cover a newer one, nor leave anything running.
import { describe, isAbort, APIError } from './api.js';
import { el, refreshTimes, notice } from './ui.js';
import { session } from './list.js';
import { signInView, handoff, userOf } from './signin.js';
import { homeView } from './home.js';
import { topView } from './top.js';
import { rankedView } from './ranked.js';
import { listsView, listView } from './lists.js';
import { userView } from './user.js';
import { peopleView } from './people.js';
import { postView } from './post.js';
import { notificationsView, unreadBadge } from './notifications.js';

const TOKEN = 'feedd.token';

function app(main, nav) {
  let s = null; // the signed-in session
  let badge = () => {}; // reads the nav's count of unread notifications again
  let current = null; // the current view's AbortController

  // signIn checks token (it works, and its user exists) and starts a
  // session with it.
  async function signIn(token) {
    const id = userOf(token);
    if (!id) throw new Error('not a user token');
    const fresh = session(token, id);
    await fresh.call('GET', '/v1/users/' + id);
    sessionStorage.setItem(TOKEN, token);
    s = fresh;
    badge = unreadBadge(s.call, document.getElementById('unread-notifications'));
  }

  function signOut() {
    badge = () => {};
    document.getElementById('unread-notifications').textContent = '';
    sessionStorage.clear();
    s = null;
    history.pushState(null, '', '/');
    render();
  }

  function go(path) {
    if (path !== location.pathname) history.pushState(null, '', path);
    render();
  }

  // view is what a view gets: the session, the API as the session for
  // this view only (its calls end with the view), show(…nodes) to put its
  // page up (nothing once the view is over), onStop(fn) to have fn run
  // when it ends, go(path) and fetchOrSay(path).
  function view(signal) {
    const v = {
      s,
      signal,
      call: s ? s.scoped(signal) : null,
      go,
      show(...nodes) {
        if (!signal.aborted) main.replaceChildren(...nodes);
      },
      onStop(fn) {
        if (signal.aborted) fn();
        else signal.addEventListener('abort', fn, { once: true });
      },
      // fetchOrSay returns what GET path answers, or null once the page
      // says why there is nothing to show (or the view is over).
      async fetchOrSay(path) {
        try {
          const r = await v.call('GET', path);
          return signal.aborted ? null : r;
        } catch (e) {
          if (!isAbort(e)) v.show(el('p', { class: 'card empty' }, describe(e)));
          return null;
        }
      },
    };
    return v;
  }

  async function render() {
    if (current) current.abort();
    const ac = new AbortController();
    current = ac;
    const v = view(ac.signal);
    notice('');
    if (!s) {
      nav.hidden = true;
      signInView(v, async (token) => {
        await signIn(token);
        notice('');
        render();
      });
      return;
    }
    nav.hidden = false;
    document.getElementById('me-link').setAttribute('href', '/users/' + s.me);
    const path = location.pathname;
    let m;
    for (const a of nav.querySelectorAll('a')) a.toggleAttribute('aria-current', a.getAttribute('href') === path);
    try {
      if (path === '/') homeView(v);
      else if (path === '/top') topView(v);
      else if (path === '/ranked') rankedView(v);
      else if (path === '/lists') await listsView(v);
      else if (path === '/search') peopleView(v);
      else if (path === '/notifications') notificationsView(v, () => badge());
      else if ((m = path.match(/^\/lists\/([0-9]+)$/))) await listView(v, m[1]);
      else if ((m = path.match(/^\/users\/([0-9]+)$/))) await userView(v, m[1]);
      else if ((m = path.match(/^\/posts\/([0-9]+)$/))) await postView(v, m[1]);
      else v.show(el('p', { class: 'card empty' }, 'There is no page here. ', el('a', { href: '/', 'data-link': true }, 'Home')));
    } catch (e) {
      if (ac.signal.aborted || isAbort(e)) return;
      notice(describe(e), 'error');
    }
    if (!ac.signal.aborted) window.scrollTo(0, 0);
  }

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

  document.addEventListener('click', (ev) => {
    const a = ev.target.closest('a[data-link]');
    if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
    ev.preventDefault();
    go(a.getAttribute('href'));
  });
  window.addEventListener('popstate', render);
  document.getElementById('signout').addEventListener('click', signOut);
  setInterval(() => {
    refreshTimes();
    badge();
  }, 30000);
  return boot;
}

app(document.getElementById('view'), document.getElementById('nav'))();
