// The user view: a user's name and handle, posts, followers and
// following, and the follow button (its state from the relationships
// route).
import { describe, isAbort } from './api.js';
import { el, notice } from './ui.js';
import { pager, pages, postEl, userItem } from './list.js';

// userView shows user id in v (see app.js).
export async function userView(v, id) {
  const { s } = v;
  const u = await v.fetchOrSay('/v1/users/' + id);
  if (!u) return;
  const followers = el('span', { class: 'count', id: 'followers' }, String(u.follower_count));
  const followersWord = el('span', {}, u.follower_count === 1 ? ' follower' : ' followers');
  const following = el('span', { class: 'count', id: 'following' }, String(u.following_count));
  const since = el('span', { id: 'follows-you' });
  const head = el('section', { class: 'card profile' }, el('h1', {}, u.name),
    u.handle ? el('p', { class: 'handle', id: 'handle' }, '@' + u.handle) : null,
    el('p', { class: 'hint' }, 'user ' + u.id + (u.id === s.me ? ' · you' : ''), since));
  const tabs = el('nav', { class: 'tabs' });
  const box = el('div', {});
  let pg = null;
  v.onStop(() => pg && pg.stop());
  const show = (which) => {
    if (pg) pg.stop();
    for (const b of tabs.children) b.setAttribute('aria-selected', String(b.dataset.tab === which));
    if (which === 'posts') pg = pager(pages(v.call, '/v1/users/' + id + '/posts'), (p) => postEl(s, p), u.name + ' has not posted yet.');
    else pg = pager(pages(v.call, '/v1/users/' + id + '/' + which), userItem, which === 'followers' ? 'No followers yet.' : 'Follows nobody yet.');
    box.replaceChildren(pg.box);
    pg.more();
  };
  tabs.append(
    el('button', { type: 'button', 'data-tab': 'posts', onclick: () => show('posts') }, 'Posts'),
    el('button', { type: 'button', 'data-tab': 'followers', onclick: () => show('followers') }, followers, followersWord),
    el('button', { type: 'button', 'data-tab': 'following', onclick: () => show('following') }, following, ' following'));
  if (u.id !== s.me) {
    const btn = el('button', { type: 'button', class: 'primary follow', id: 'follow', disabled: true }, '…');
    let on = false;
    const label = () => { btn.textContent = on ? 'Unfollow' : 'Follow'; btn.setAttribute('aria-pressed', String(on)); };
    // One call says how the reader stands to this user.
    v.call('GET', '/v1/me/relationships/' + id).then((r) => {
      on = r.following;
      label();
      btn.disabled = false;
      if (r.followed_by) since.textContent = ' · follows you';
    }, (e) => isAbort(e) || notice(describe(e), 'error'));
    btn.addEventListener('click', async () => {
      btn.disabled = true;
      try {
        await s.call(on ? 'DELETE' : 'PUT', '/v1/me/following/' + id);
        on = !on;
        label();
        const fresh = await s.call('GET', '/v1/users/' + id);
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
  v.show(head, tabs, box);
  show('posts');
}
