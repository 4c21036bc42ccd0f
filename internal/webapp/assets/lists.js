// The lists views: the signed-in user's lists, and one list's feed and
// members (GET /v1/lists, /v1/lists/{id}/feed and /members).
import { describe } from './api.js';
import { el, notice } from './ui.js';
import { pager, pages, postEl, userItem } from './list.js';
import { liveFeed } from './live.js';

// listsView shows the user's lists in v (see app.js), with a form that
// makes one.
export async function listsView(v) {
  const r = await v.fetchOrSay('/v1/lists');
  if (!r) return;
  const items = el('ol', { class: 'list', id: 'lists' });
  const show = (l) => items.append(el('li', {}, el('div', { class: 'user' },
    el('a', { href: '/lists/' + l.id, 'data-link': true }, l.name),
    el('span', { class: 'hint' }, ' ' + l.member_count + (l.member_count === 1 ? ' member' : ' members') + (l.exclusive ? ' · exclusive' : '')))));
  r.items.forEach(show);
  const name = el('input', { id: 'list-name', placeholder: 'A new list', maxlength: 64, required: true, 'aria-label': 'List name' });
  const exclusive = el('input', { type: 'checkbox', id: 'list-exclusive' });
  const form = el('form', { class: 'form-row goto', id: 'new-list' }, name,
    el('label', {}, exclusive, ' exclusive'), el('button', { type: 'submit' }, 'Create'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const l = await v.call('POST', '/v1/lists', { name: name.value, exclusive: exclusive.checked });
      name.value = '';
      show(l);
      notice('');
    } catch (e) {
      notice(describe(e), 'error');
    }
  });
  v.show(el('h1', { class: 'title' }, 'Lists'), el('p', { class: 'hint' },
    "An exclusive list's members leave your home feed; their posts are here."), form, items);
}

// listView shows list id in v: its feed, its members, and a form that adds
// one by id.
export async function listView(v, id) {
  const { s } = v;
  const l = await v.fetchOrSay('/v1/lists/' + id);
  if (!l) return;
  const path = '/v1/lists/' + id;
  const tabs = el('nav', { class: 'tabs' });
  const box = el('div', {});
  let pg = null;
  let live = null;
  v.onStop(() => pg && pg.stop());
  const show = (which) => {
    if (pg) pg.stop();
    for (const b of tabs.children) b.setAttribute('aria-selected', String(b.dataset.tab === which));
    if (live) live.stop();
    live = null;
    if (which === 'feed') {
      // The list's live stream brings its members' new posts.
      const item = (p) => postEl(s, p);
      const lf = liveFeed(v, () => feed, item, 'list=' + encodeURIComponent(id));
      const feed = pager(pages(v.call, path + '/feed'), item, 'No posts by the members yet.',
        (items) => lf.start(items.length ? items[0].id : null));
      live = lf;
      pg = feed;
      box.replaceChildren(live.pill, pg.box);
      pg.more();
      return;
    }
    pg = pager(pages(v.call, path + '/members'), (u) => memberItem(u), 'No members yet: add some by their id.');
    box.replaceChildren(pg.box);
    pg.more();
  };
  const memberItem = (u) => {
    const row = userItem(u);
    row.append(el('button', {
      type: 'button', class: 'remove', onclick: async (ev) => {
        try {
          await s.call('DELETE', path + '/members/' + u.id);
          ev.target.closest('li').remove();
        } catch (e) {
          notice(describe(e), 'error');
        }
      },
    }, 'Remove'));
    return row;
  };
  tabs.append(
    el('button', { type: 'button', 'data-tab': 'feed', onclick: () => show('feed') }, 'Posts'),
    el('button', { type: 'button', 'data-tab': 'members', onclick: () => show('members') }, 'Members'));
  const who = el('input', { id: 'member-id', placeholder: 'a user id', inputmode: 'numeric', pattern: '[0-9]+', required: true, 'aria-label': 'User id' });
  const add = el('form', { class: 'form-row goto', id: 'add-member' }, who, el('button', { type: 'submit' }, 'Add to the list'));
  add.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await s.call('PUT', path + '/members/' + who.value.trim());
      who.value = '';
      notice('Added.');
      show('members');
    } catch (e) {
      notice(describe(e), 'error');
    }
  });
  const exclusive = el('input', { type: 'checkbox', id: 'exclusive' });
  exclusive.checked = l.exclusive;
  exclusive.addEventListener('change', async () => {
    try {
      await s.call('PATCH', path, { exclusive: exclusive.checked });
    } catch (e) {
      exclusive.checked = !exclusive.checked;
      notice(describe(e), 'error');
    }
  });
  v.show(el('section', { class: 'card profile' }, el('h1', {}, l.name),
    el('label', {}, exclusive, ' exclusive: its members leave your home feed')), add, tabs, box);
  show('feed');
}
