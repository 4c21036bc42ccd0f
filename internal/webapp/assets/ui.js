// Small DOM helpers shared by the app and the console. Text goes in as
// text nodes only: nothing here parses a string as HTML, so what users
// write can never become markup.

// el builds an element: el('a', {href: '/top', class: 'x'}, 'text', child…).
// Attributes starting with "on" are event listeners.
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (v === true) e.setAttribute(k, '');
    else e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// ago says how long ago a time was, in a few characters.
export function ago(iso, now = Date.now()) {
  const t = Date.parse(iso);
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 10) return 'just now';
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  if (s < 7 * 86400) return Math.floor(s / 86400) + ' d ago';
  return new Date(t).toLocaleDateString();
}

// timeEl is a <time> that refreshTimes keeps relative.
export function timeEl(iso) {
  return el('time', { datetime: iso, title: new Date(iso).toLocaleString() }, ago(iso));
}

export function refreshTimes(root = document) {
  const now = Date.now();
  for (const t of root.querySelectorAll('time[datetime]')) t.textContent = ago(t.getAttribute('datetime'), now);
}

// confirmDialog asks a yes/no question in a <dialog> (window.confirm would
// block the page and every test driving it) and resolves to the answer.
export function confirmDialog(question, yes = 'Yes') {
  return new Promise((resolve) => {
    const d = el('dialog', { class: 'confirm' },
      el('p', {}, question),
      el('div', { class: 'row' },
        el('button', { type: 'button', class: 'cancel', onclick: () => d.close('no') }, 'Cancel'),
        el('button', { type: 'button', class: 'primary ok', onclick: () => d.close('yes') }, yes)));
    d.addEventListener('close', () => {
      d.remove();
      resolve(d.returnValue === 'yes');
    });
    document.body.append(d);
    d.showModal();
  });
}

// notice shows a message in the page's status line (role=status, so
// screen readers read it); kind "error" makes it stand out.
export function notice(text, kind = 'info') {
  const n = document.getElementById('notice');
  if (!n) return;
  n.textContent = text;
  n.className = 'notice ' + kind;
  n.hidden = !text;
}
