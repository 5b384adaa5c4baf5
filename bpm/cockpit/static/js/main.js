// The cockpit's shell: session and login, a hash router, and short polling of the page
// on screen (every 2 s while the tab is visible), so it stays live without reloads.

import { ApiError, loadSession, login, logout, session } from './api.js';
import { clear, h } from './dom.js';
import { decisionPage, decisionsPage } from './pages/decisions.js';
import { definitionPage, definitionsPage } from './pages/definitions.js';
import { incidentsPage } from './pages/incidents.js';
import { instancePage } from './pages/instance.js';
import { instancesPage } from './pages/instances.js';
import { workPage } from './pages/work.js';

const POLL_MS = 2000;
const main = document.getElementById('main');
let current = null; // { refresh, dispose } of the page on screen
let timer = null;
let generation = 0;

const routes = [
  [/^#\/definitions\/(.+)$/, (m) => definitionPage(decodeURIComponent(m[1])), 'definitions'],
  [/^#\/definitions$/, () => definitionsPage(), 'definitions'],
  [/^#\/instances\/([^?]+)$/, (m) => instancePage(decodeURIComponent(m[1])), 'instances'],
  [/^#\/instances(\?.*)?$/, (m) => instancesPage(new URLSearchParams((m[1] || '').slice(1))), 'instances'],
  [/^#\/incidents$/, () => incidentsPage(), 'incidents'],
  [/^#\/decisions\/(.+)$/, (m) => decisionPage(decodeURIComponent(m[1])), 'decisions'],
  [/^#\/decisions$/, () => decisionsPage(), 'decisions'],
  [/^#\/work$/, () => workPage(), 'work'],
];

function renderWho() {
  const who = document.getElementById('who');
  if (!session.authenticated) return clear(who);
  const label = session.open ? 'no keys (bpm dev)' : `${session.key} · ${session.role}`;
  clear(who,
    h('span', { 'data-testid': 'who' }, label),
    session.open ? null : h('button', { class: 'link', onclick: async () => { await logout(); route(); } }, 'log out'));
}

function loginForm(message) {
  const input = h('input', { type: 'password', name: 'secret', placeholder: 'API key secret', autocomplete: 'current-password', 'data-testid': 'secret' });
  const form = h('form', { class: 'card login', 'data-testid': 'login' },
    h('h2', {}, 'Log in'),
    h('p', { class: 'muted' }, 'Paste the secret of an API key (BPM_API_KEYS). Operator keys may act; role=viewer keys may only look.'),
    message ? h('p', { class: 'error' }, message) : null,
    input,
    h('button', { type: 'submit' }, 'Log in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await login(input.value);
      route();
    } catch (err) {
      clear(main, loginForm(err.message));
    }
  });
  return form;
}

export async function route() {
  const gen = ++generation;
  stopPolling();
  document.getElementById('flash').hidden = true;
  if (current && current.dispose) current.dispose();
  current = null;
  try {
    await loadSession();
  } catch (err) {
    clear(main, h('p', { class: 'error' }, `The API does not answer: ${err.message}`));
    return;
  }
  renderWho();
  if (!session.authenticated) {
    clear(main, loginForm());
    return;
  }
  const hash = location.hash && location.hash !== '#' && location.hash !== '#/' ? location.hash : '#/definitions';
  for (const [pattern, make, nav] of routes) {
    const m = hash.match(pattern);
    if (!m) continue;
    for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.nav === nav);
    try {
      const page = await make(m);
      if (gen !== generation) { if (page.dispose) page.dispose(); return; }
      current = page;
      clear(main, page.el);
      if (page.mounted) page.mounted();
      startPolling(gen);
    } catch (err) {
      if (gen !== generation) return;
      if (err instanceof ApiError && err.status === 401) { clear(main, loginForm('Your session ended; log in again.')); return; }
      clear(main, h('section', { class: 'card' }, h('h2', {}, 'Cannot show this page'), h('p', { class: 'error', 'data-testid': 'page-error' }, err.message)));
    }
    return;
  }
  clear(main, h('p', { class: 'error' }, `No page at ${hash}`));
}

function startPolling(gen) {
  stopPolling();
  if (!current || !current.refresh) return;
  timer = setInterval(async () => {
    if (document.hidden || gen !== generation || !current) return;
    try {
      await current.refresh();
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) route();
    }
  }, POLL_MS);
}

function stopPolling() {
  if (timer) clearInterval(timer);
  timer = null;
}

window.addEventListener('hashchange', route);
route();
