// The post view: a post in its thread (its ancestors, the post, a reply
// form, its descendants) and who likes it.
import { describe } from './api.js';
import { el, notice } from './ui.js';
import { pager, pages, postEl, userItem } from './list.js';

// postView shows post id in v (see app.js).
export async function postView(v, id) {
  const p = await v.fetchOrSay('/v1/posts/' + id);
  if (!p) return;
  const thread = await v.fetchOrSay('/v1/posts/' + id + '/context');
  if (!thread) return;
  const item = (q) => el('li', {}, postEl(v.s, q));
  // The descendants come depth first; each is indented by its depth
  // below the post, found from its parent (CSS caps it).
  const depth = new Map([[p.id, 0]]);
  const nested = (q) => {
    const d = (depth.get(q.in_reply_to_id) ?? 0) + 1;
    depth.set(q.id, d);
    const li = item(q);
    li.className = 'depth-' + Math.min(d, 6);
    return li;
  };
  const ancestors = el('ol', { class: 'list ancestors' }, ...thread.ancestors.map(item));
  const descendants = el('ol', { class: 'list descendants' }, ...thread.descendants.map(nested));
  const likers = pager(pages(v.call, '/v1/posts/' + id + '/likes'), userItem, 'Nobody likes this post yet.');
  v.onStop(likers.stop);
  v.show(ancestors, el('div', { class: 'single' }, postEl(v.s, p)), replyForm(v, p, (r) => descendants.prepend(nested(r))),
    el('h2', {}, 'Replies'), descendants, el('h2', {}, 'Liked by'), likers.box);
  if (location.hash === '#reply') document.getElementById('reply').focus();
  likers.more();
}

// replyForm publishes a reply to p and hands it to shown.
function replyForm(v, p, shown) {
  const text = el('textarea', { id: 'reply', name: 'content', maxlength: 5000, rows: 2, placeholder: 'Your reply', required: true });
  const form = el('form', { class: 'card compose reply-form' }, text,
    el('div', { class: 'row' }, el('button', { class: 'primary', type: 'submit' }, 'Reply')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (!text.value.trim()) return;
    const btn = form.querySelector('button');
    btn.disabled = true;
    try {
      const r = await v.s.call('POST', '/v1/posts', { content: text.value, in_reply_to_id: p.id });
      text.value = '';
      shown(r);
      notice('');
    } catch (e) {
      notice(describe(e), 'error');
    } finally {
      btn.disabled = false;
    }
  });
  return form;
}
