// The notifications view: the groups GET /v1/me/notifications answers
// ("alice, bob and 998 others liked your post"), newest first, paged as
// the reader scrolls; opening it moves the notifications marker to the
// newest group, so the nav's badge counts only what came after.
import { el, timeEl } from './ui.js';
import { pager, pages } from './list.js';

const VERBS = { like: 'liked your post', repost: 'reposted your post', follow: 'followed you', reply: 'replied to your post' };

// notificationsView shows the signed-in user's notifications in v (see
// app.js), then marks them read.
export function notificationsView(v, onRead) {
  const list = pager(pages(v.call, '/v1/me/notifications'), groupEl, 'No notifications yet.', async (items) => {
    if (!items.length) return;
    try {
      await v.call('PUT', '/v1/me/markers/notifications', { last_read_id: items[0].id });
      onRead();
    } catch {
      // The badge stays until the next visit: nothing to tell the reader.
    }
  });
  v.onStop(list.stop);
  v.show(el('h1', { class: 'title' }, 'Notifications'), list.box);
  list.more();
}

// groupEl shows one group: who (the newest three by name, then how many
// more), what, when, and the post it is about.
function groupEl(g) {
  const names = g.actors.map((u) => el('a', { href: '/users/' + u.id, 'data-link': true }, u.name));
  const who = [];
  names.forEach((n, i) => {
    if (i > 0) who.push(i === names.length - 1 && g.actor_count === names.length ? ' and ' : ', ');
    who.push(n);
  });
  const others = g.actor_count - names.length;
  if (others > 0) who.push(' and ' + others + (others === 1 ? ' other' : ' others'));
  const about = g.post ? el('a', { href: '/posts/' + g.post.id, 'data-link': true, class: 'about' }, g.post.content || 'a post') : null;
  return el('article', { class: 'notification', 'data-id': g.id, 'data-type': g.type },
    el('p', {}, ...who, ' ' + (VERBS[g.type] || g.type), ' · ', timeEl(g.latest_at)), about);
}

// unreadBadge keeps el's text the number of unread notification groups
// ('' for none): read now, and again by refresh().
export function unreadBadge(call, badge) {
  const refresh = async () => {
    try {
      const m = await call('GET', '/v1/me/markers/notifications');
      badge.textContent = m.unread_count ? (m.unread_capped ? m.unread_count + '+' : String(m.unread_count)) : '';
    } catch {
      // A badge is no reason to bother the reader with an error.
    }
  };
  refresh();
  return refresh;
}
