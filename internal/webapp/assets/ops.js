// The operator's console: live figures of the deployment, the degradation
// switches, dead letters, and users (create one, open the app as one).
// The page holds nothing secret; every figure and action is an admin API
// call with the admin token kept in this tab's sessionStorage.
import { client, describe, APIError } from './api.js';
import { el, timeEl, confirmDialog, notice } from './ui.js';

const ADMIN = 'feedd.admin';
const USERS = 'feedd.ops.users'; // users made from this tab: ids and names, no tokens
const EVERY = 3000; // ms between refreshes
const KEEP = 60; // samples per chart: three minutes

const main = document.getElementById('view');
const nav = document.getElementById('nav');
let call = null;
let timer = null;

// ---- sign-in ----

function showSignIn() {
  nav.hidden = true;
  const input = el('input', { type: 'password', id: 'admin-token', autocomplete: 'off', required: true });
  const form = el('form', { class: 'card signin', id: 'signin' },
    el('h1', {}, 'feedd console'),
    el('label', { for: 'admin-token' }, 'The admin token'),
    input,
    el('p', { class: 'hint' }, 'feedd prints it at start (and keeps it in ./data/admin_token on the embedded default). It stays in this tab only.'),
    el('button', { class: 'primary', type: 'submit' }, 'Open the console'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await signIn(input.value.trim());
      notice('');
      showConsole();
    } catch (e) {
      notice(e instanceof APIError && e.status === 401 ? 'That is not the admin token.' : describe(e), 'error');
    }
  });
  main.replaceChildren(form);
  input.focus();
}

async function signIn(token) {
  const c = client(token);
  await c('GET', '/v1/admin/degradation'); // admin only: proves the token
  sessionStorage.setItem(ADMIN, token);
  call = c;
}

function signOut() {
  clearTimeout(timer);
  sessionStorage.clear();
  call = null;
  showSignIn();
}

// ---- charts ----

// spark draws values as a line in an inline SVG, scaled to its own
// maximum (built node by node: no markup strings, no library).
function spark(values) {
  const NS = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('viewBox', '0 0 100 30');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('aria-hidden', 'true');
  const vs = values.filter((v) => v !== null && v !== undefined);
  if (vs.length < 2) return svg;
  const max = Math.max(...vs) || 1;
  const pts = values.map((v, i) => (v === null || v === undefined ? null : [(i / (KEEP - 1)) * 100, 29 - (v / max) * 27]))
    .filter(Boolean).map(([x, y]) => x.toFixed(1) + ',' + y.toFixed(1)).join(' ');
  const line = document.createElementNS(NS, 'polyline');
  line.setAttribute('points', pts);
  line.setAttribute('fill', 'none');
  line.setAttribute('stroke', 'currentColor');
  line.setAttribute('stroke-width', '1.5');
  line.setAttribute('vector-effect', 'non-scaling-stroke');
  svg.append(line);
  return svg;
}

const series = new Map(); // series name → values, oldest first, right-aligned

function sample(name, v) {
  let h = series.get(name);
  if (!h) series.set(name, (h = Array(KEEP).fill(null)));
  h.push(v === undefined ? null : v);
  h.shift();
  return h;
}

function fmt(v, unit = '') {
  if (v === null || v === undefined) return '—';
  const n = Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 10) / 10;
  return n.toLocaleString() + unit;
}

function figure(id, label, value, series, sub) {
  return el('div', { class: 'figure', id: 'fig-' + id },
    el('div', { class: 'label' }, label),
    el('div', { class: 'value' }, value),
    sub ? el('div', { class: 'hint' }, sub) : null,
    series ? spark(series) : null);
}

// ---- the console ----

function showConsole() {
  nav.hidden = false;
  const figures = el('section', { id: 'figures' }, el('p', { class: 'end' }, 'Loading the figures…'));
  const switches = el('section', { class: 'card', id: 'switches' }, el('h2', {}, 'Degradation switches'));
  const users = usersSection();
  const tables = el('section', { id: 'tables' });
  main.replaceChildren(el('h1', {}, 'Deployment'), figures, switches, tables, users);
  const tick = async () => {
    // A console in a background tab asks nothing; it catches up when seen.
    if (!document.hidden) await Promise.all([refreshFigures(figures, tables), refreshSwitches(switches)]);
    if (call) timer = setTimeout(tick, EVERY);
  };
  tick();
}

async function refreshFigures(box, tablesBox) {
  let o;
  try {
    o = await call('GET', '/v1/admin/overview');
  } catch (e) {
    if (e instanceof APIError && e.status === 404) {
      box.replaceChildren(el('p', { class: 'card hint' }, 'This feedd serves no overview (GET /v1/admin/overview answers 404); its figures are at /metrics.'));
    } else {
      box.replaceChildren(el('p', { class: 'card bad' }, describe(e)));
    }
    return;
  }
  const q = (name) => (o.queues || []).find((x) => x.name === name) || {};
  const dead = (o.queues || []).reduce((s, x) => s + (x.dead_letters || 0), 0);
  const tiles = el('div', { class: 'grid' },
    figure('publish', 'Publishes per second', fmt(o.publish.per_second), sample('pub', o.publish.per_second),
      'p50 ' + fmt(o.publish.p50_ms, ' ms') + ' · p99 ' + fmt(o.publish.p99_ms, ' ms')),
    figure('read', 'Feed reads per second', fmt(o.read.per_second), sample('read', o.read.per_second),
      'p50 ' + fmt(o.read.p50_ms, ' ms') + ' · p99 ' + fmt(o.read.p99_ms, ' ms')),
    figure('lag', 'Fan-out lag p99', fmt(o.fanout.lag_p99_ms, ' ms'), sample('lag', o.fanout.lag_p99_ms),
      fmt(o.fanout.inbox_writes_per_second) + ' inbox writes/s'),
    figure('outbox', 'Outbox backlog', fmt(o.outbox.unsent), sample('outbox', o.outbox.unsent),
      'oldest ' + fmt(o.outbox.oldest_age_seconds, ' s')),
    figure('tasks', 'Queued fan-out tasks', fmt(q('tasks').depth), sample('tasks', q('tasks').depth),
      'posts ' + fmt(q('posts').depth) + ' · likes ' + fmt(q('likes').depth)),
    figure('dead', 'Dead letters', fmt(dead), sample('dead', dead), null));

  const requeue = el('button', {
    type: 'button', id: 'requeue', disabled: dead === 0, onclick: async () => {
      if (!(await confirmDialog('Put every dead letter back on its queue? Do it once the cause of the failures is fixed.', 'Requeue'))) return;
      try {
        const r = await call('POST', '/v1/admin/dead-letters/requeue', { queue: 'all' });
        const moved = Object.entries(r.requeued || {}).map(([k, v]) => k + ' ' + v).join(', ');
        notice('Requeued: ' + (moved || 'nothing') + '.', 'ok');
      } catch (e) {
        notice(describe(e), 'error');
      }
    },
  }, 'Requeue dead letters');
  const queues = el('table', {}, el('tr', {}, el('th', {}, 'queue'), el('th', {}, 'depth'), el('th', {}, 'dead letters')),
    (o.queues || []).map((x) => el('tr', {}, el('td', {}, x.name), el('td', {}, fmt(x.depth)), el('td', {}, fmt(x.dead_letters)))));
  const breakers = el('table', {}, el('tr', {}, el('th', {}, 'breaker'), el('th', {}, 'state'), el('th', {}, 'open in')),
    (o.breakers || []).map((b) => el('tr', {}, el('td', {}, b.name), el('td', { class: 'state-' + b.state }, b.state),
      el('td', {}, (b.open || 0) + ' of ' + (b.processes || 0)))));
  const procs = el('table', {}, el('tr', {}, el('th', {}, 'process'), el('th', {}, 'role'), el('th', {}, 'started'), el('th', {}, 'seen'), el('th', {}, 'reads/s'), el('th', {}, 'replica lag'), el('th', {}, 'shards down')),
    (o.processes || []).map((p) => el('tr', {}, el('td', {}, p.id), el('td', {}, p.role), el('td', {}, timeEl(p.started_at)),
      el('td', {}, timeEl(p.last_seen)), el('td', {}, fmt(p.read && p.read.per_second)),
      el('td', {}, p.replica_lag_seconds == null ? '–' : p.replica_lag_seconds.toFixed(2) + ' s'),
      el('td', { class: (p.shards_down || []).length ? 'bad' : '' }, (p.shards_down || []).length ? p.shards_down.join(', ') : '–'))));
  box.replaceChildren(tiles);
  if ((o.problems || []).length) box.append(el('ul', { class: 'card bad', id: 'problems' }, o.problems.map((p) => el('li', {}, p))));
  tablesBox.replaceChildren(
    el('div', { class: 'grid two' },
      el('section', { class: 'card' }, el('div', { class: 'row' }, el('h2', {}, 'Queues'), requeue), queues),
      el('section', { class: 'card' }, el('h2', {}, 'Circuit breakers'), breakers)),
    el('section', { class: 'card' }, el('h2', {}, 'Processes seen (' + (o.processes || []).length + ')'), procs,
      el('p', { class: 'hint' }, 'Rates and latencies over the last ' + Math.round(o.window_seconds) + ' s; updated every ' + EVERY / 1000 + ' s.')));
}

async function refreshSwitches(box) {
  let d;
  try {
    d = await call('GET', '/v1/admin/degradation');
  } catch (e) {
    box.replaceChildren(el('h2', {}, 'Degradation switches'), el('p', { class: 'bad' }, describe(e)));
    return;
  }
  const rows = Object.keys(d.switches).sort().map((name) => {
    const on = d.switches[name];
    const b = el('button', { type: 'button', id: 'switch-' + name, 'aria-pressed': String(on) }, on ? name + ' is ON' : name + ' is off');
    b.addEventListener('click', async () => {
      const q = (on ? 'Turn ' + name + ' off: ' : 'Turn ' + name + ' on: ') + d.meaning[name] + '?';
      if (!(await confirmDialog(q, on ? 'Turn off' : 'Turn on'))) return;
      try {
        const r = await call('PUT', '/v1/admin/degradation', { [name]: !on });
        notice(name + (r.switches[name] ? ' is on' : ' is off') + (r.shared === false ? ' in this process only: the shared store did not take it.' : ' on every process within seconds.'), r.shared === false ? 'error' : 'ok');
      } catch (e) {
        notice(describe(e), 'error');
      }
      refreshSwitches(box);
    });
    return el('div', { class: 'switch' }, el('span', {}, el('strong', {}, name), ' ', d.meaning[name]), b);
  });
  box.replaceChildren(el('h2', {}, 'Degradation switches (level ' + d.level + ')'), el('div', { class: 'switches' }, rows));
}

// ---- users ----

function savedUsers() {
  try {
    return JSON.parse(sessionStorage.getItem(USERS) || '[]');
  } catch (e) {
    return [];
  }
}

function usersSection() {
  const list = el('ul', { class: 'list', id: 'users' });
  const show = () => list.replaceChildren(...savedUsers().map((u) => el('li', { class: 'user row' },
    el('span', {}, el('strong', {}, u.name), ' ', el('span', { class: 'hint' }, 'id ' + u.id)),
    el('button', { type: 'button', class: 'open-as', 'data-id': u.id, onclick: () => openAs(u.id) }, 'Open the app as ' + u.name))));
  const name = el('input', { id: 'new-name', placeholder: 'name', required: true, maxlength: 64 });
  const id = el('input', { id: 'new-id', placeholder: 'id (optional)', inputmode: 'numeric', pattern: '[0-9]*' });
  const create = el('form', { class: 'form-row', id: 'create-user' }, name, id, el('button', { class: 'primary', type: 'submit' }, 'Create user'));
  create.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = { name: name.value.trim() };
    if (id.value.trim()) body.id = id.value.trim();
    try {
      const u = await call('POST', '/v1/users', body);
      sessionStorage.setItem(USERS, JSON.stringify([...savedUsers(), { id: u.id, name: u.name }]));
      name.value = '';
      id.value = '';
      notice('Created ' + u.name + ' (id ' + u.id + ').', 'ok');
      show();
    } catch (e) {
      notice(describe(e), 'error');
    }
  });
  const other = el('input', { id: 'open-id', placeholder: 'any user id', inputmode: 'numeric', pattern: '[0-9]+', required: true });
  const open = el('form', { class: 'form-row' }, other, el('button', { type: 'submit' }, 'Open the app as this user'));
  open.addEventListener('submit', (ev) => {
    ev.preventDefault();
    openAs(other.value.trim());
  });
  show();
  return el('section', { class: 'card', id: 'users-section' }, el('h2', {}, 'Users'), create, list, open,
    el('p', { class: 'hint' }, 'Opening the app mints a token valid for one hour and hands it to the new tab by postMessage: it never goes in a URL.'));
}

// handoffs are tabs opened as a user, waiting for their token.
const handoffs = new Map(); // window → token

// openAs mints a one-hour token for user id and opens the app in a new tab
// with it. The tab asks this one for its token by postMessage (see the
// app's handoff), so the token never appears in a URL or in storage
// shared between tabs.
async function openAs(id) {
  // Open first, within the click, or the browser blocks the pop-up.
  const w = window.open('/', '_blank');
  if (!w) {
    notice('The browser blocked the new tab: allow pop-ups for this page.', 'error');
    return;
  }
  try {
    const t = await call('POST', '/v1/users/' + id + '/tokens', { ttl_seconds: 3600 });
    handoffs.set(w, t.token);
    setTimeout(() => handoffs.delete(w), 60000);
  } catch (e) {
    w.close();
    notice(describe(e), 'error');
  }
}

window.addEventListener('message', (ev) => {
  if (ev.origin !== location.origin || !ev.data || ev.data.type !== 'feedd:ready') return;
  const give = () => {
    const token = handoffs.get(ev.source);
    if (!token) return false;
    handoffs.delete(ev.source);
    ev.source.postMessage({ type: 'feedd:token', token }, location.origin);
    return true;
  };
  // The tab may be ready before its token is minted: try again a while.
  let tries = 0;
  const retry = () => { if (!give() && ++tries < 15) setTimeout(retry, 100); };
  retry();
});

document.getElementById('signout').addEventListener('click', signOut);

async function boot() {
  const saved = sessionStorage.getItem(ADMIN);
  if (saved) {
    try {
      await signIn(saved);
      showConsole();
      return;
    } catch (e) {
      if (!(e instanceof APIError) || e.status === 401 || e.status === 403) sessionStorage.removeItem(ADMIN);
      notice(describe(e), 'error');
    }
  }
  showSignIn();
}
boot();
