// The home feed's live stream: an EventSource on /v1/me/feed/stream.
import { describe, isAbort, APIError } from './api.js';
import { notice } from './ui.js';

// liveStream keeps an EventSource on /v1/me/feed/stream. A ticket opens one
// stream only, and EventSource would reconnect to the same URL by itself,
// so on any error the stream is closed and reopened with a fresh ticket
// and the last post id seen (?last_event_id=), after a growing pause.
// on has post(p), update(p) (an edit of a post the stream sent),
// remove(id) and reset(). call is the API for the view that owns the
// stream; stop() ends it for good.
export function liveStream(call, on) {
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
