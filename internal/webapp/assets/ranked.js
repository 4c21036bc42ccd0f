// The ranked view: the home feed's recent posts, best first
// (GET /v1/me/feed?order=ranked).
import { APIError } from './api.js';
import { el, notice } from './ui.js';
import { pager, pages, postEl } from './list.js';

// rankedView shows the signed-in user's ranked feed in v (see app.js). The
// first page ranks afresh and the list pages through that ranking; when
// the ranking has expired (its cursor answers 410 cursor_expired, some
// minutes after the last page) the view ranks afresh, and says so.
export function rankedView(v) {
  const box = el('div', {});
  let pg = null;
  const load = () => {
    if (pg) pg.stop();
    const page = pages(v.call, '/v1/me/feed?order=ranked');
    pg = pager(async (cursor) => {
      try {
        return await page(cursor);
      } catch (e) {
        if (!(e instanceof APIError) || e.code !== 'cursor_expired') throw e;
        notice('That ranking expired, so here is a fresh one.');
        setTimeout(load);
        return { items: [], next_cursor: null };
      }
    }, (p) => postEl(v.s, p), 'Nothing from the last three days. Follow people from their pages, or see every post on Home.');
    box.replaceChildren(pg.box);
    pg.more();
  };
  v.onStop(() => pg && pg.stop());
  const again = el('button', { type: 'button', id: 'rerank' }, 'Rank again');
  again.addEventListener('click', () => {
    notice('');
    load();
  });
  v.show(el('div', { class: 'row' }, el('h1', { class: 'title' }, 'For you'), again), box);
  load();
}
