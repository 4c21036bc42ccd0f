// The post view: one post and who likes it.
import { el } from './ui.js';
import { pager, pages, postEl, userItem } from './list.js';

// postView shows post id in v (see app.js).
export async function postView(v, id) {
  const p = await v.fetchOrSay('/v1/posts/' + id);
  if (!p) return;
  const likers = pager(pages(v.call, '/v1/posts/' + id + '/likes'), userItem, 'Nobody likes this post yet.');
  v.onStop(likers.stop);
  v.show(el('div', { class: 'single' }, postEl(v.s, p)), el('h2', {}, 'Liked by'), likers.box);
  likers.more();
}
