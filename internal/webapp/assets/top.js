// The top view: the most liked posts of a window.
import { el } from './ui.js';
import { pager, pages, postEl } from './list.js';

// topView shows the most liked posts in v (see app.js); the window is
// picked on the page, and each pick has a list of its own.
export function topView(v) {
  const pick = el('select', { id: 'window', 'aria-label': 'Window' },
    el('option', { value: '24h' }, 'last 24 hours'), el('option', { value: '7d' }, 'last 7 days'), el('option', { value: '720h' }, 'last 30 days'));
  const box = el('div', {});
  let pg = null;
  const load = () => {
    if (pg) pg.stop();
    pg = pager(pages(v.call, '/v1/posts/top?window=' + pick.value), (p) => postEl(v.s, p), 'No liked posts in this window yet.');
    box.replaceChildren(pg.box);
    pg.more();
  };
  pick.addEventListener('change', load);
  v.onStop(() => pg && pg.stop());
  v.show(el('div', { class: 'row' }, el('h1', { class: 'title' }, 'Most liked'), pick), box);
  load();
}
