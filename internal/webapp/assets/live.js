// A feed's live stream (the home feed's, or a list's with ?list=): an
// EventSource on /v1/me/feed/stream, and the pill of new posts it fills.
import { describe, isAbort, APIError } from './api.js';
import { el, notice } from './ui.js';

// liveStream keeps an EventSource on /v1/me/feed/stream. A ticket opens one
// stream only, and EventSource would reconnect to the same URL by itself,
// so on any error the stream is closed and reopened with a fresh ticket
// and the last post id seen (?last_event_id=), after a growing pause.
// on has post(p), update(p) (an edit of a post the stream sent),
// remove(id) and reset(). call is the API for the view that owns the
// stream; query is added to its URL (list=ID for a list's); stop() ends it
// for good.
export function liveStream(call, on, query) {
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
      if (stopped || isAbort(e)) return;
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
    if (query) url += '&' + query;
    es = new EventSource(url);
    es.addEventListener('open', () => { wait = 1000; document.body.dataset.live = 'on'; });
    es.addEventListener('post', (ev) => {
      last = ev.lastEventId || last;
      on.post(JSON.parse(ev.data));
    });
    // An update has no id: line (it must not move the resume point back
    // to an older post), so it leaves last alone.
    es.addEventListener('update', (ev) => on.update(JSON.parse(ev.data)));
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

// liveFeed keeps a paged feed (feed(): the pager, once made) current with
// its live stream: new posts wait behind a pill that shows how many, and
// go on the page when it is clicked; one's own post goes on the page at
// once (no news to its author); edits and deletes apply where the post
// is. item renders a post; query picks the stream (liveStream). The pill
// goes in the view; start(from) opens the stream after post from, the
// newest on the first page, so nothing published between the page and the
// stream is missed.
export function liveFeed(v, feed, item, query) {
  const { s } = v;
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
    prepend(feed(), pending.splice(0).reverse(), item);
    showPill();
  });
  const live = liveStream(v.call, {
    post: (p) => {
      if (feed().shown.has(p.id) || pending.some((q) => q.id === p.id)) return;
      // This tab's publish may not have had its answer yet; another
      // tab's shows here at once.
      if (p.author_id === s.me) {
        prepend(feed(), [p], item);
        return;
      }
      pending.push(p);
      showPill();
    },
    update: (p) => {
      // An edit: the post is shown again as it is now, where it is.
      const i = pending.findIndex((q) => q.id === p.id);
      if (i >= 0) pending[i] = p;
      for (const a of feed().list.querySelectorAll('article[data-id="' + p.id + '"]')) a.replaceWith(item(p));
    },
    remove: (id) => {
      unpend(id);
      const a = feed().list.querySelector('article[data-id="' + id + '"]');
      if (a) a.closest('li').remove();
    },
    reset: () => {
      pending.length = 0;
      pill.hidden = false;
      pill.textContent = 'Many new posts: reload';
      pill.onclick = () => location.reload();
    },
  }, query);
  v.onStop(live.stop);
  return {
    pill,
    start: live.start,
    stop: live.stop,
    // published shows a post this tab just published, which the stream
    // may have brought already.
    published(p) {
      unpend(p.id);
      prepend(feed(), [p], item);
    },
  };
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
  // The feed said it was empty: it is not any more.
  const end = pg.box.querySelector('.end');
  if (end.dataset.state === 'done') end.textContent = 'That is all.';
}
