// The console's shell: who is signed in, the navigation, the hash router, the live feed
// (`GET /v1/events`) the views subscribe to, and the polite announcer.

import { api, ApiError, clear, clearToken, describe, el, setToken, stream, token } from './api.js';
import { renderRuns, renderTimeline } from './runs.js';
import { renderApprovals } from './approvals.js';
import { renderTools, renderTool } from './tools.js';
import { renderChat } from './chat.js';
import { renderScripts } from './scripts.js';
import { forgetApps } from './apps.js';

const ROUTES = [
  ['runs', 'Runs'],
  ['approvals', 'Approvals'],
  ['tools', 'Tools'],
  ['chat', 'Playground'],
  ['scripts', 'Scripts'],
];

const state = { me: null, feed: null, listeners: new Set(), cleanup: null };

/** Says something to screen readers (and shows it in the live region). */
export function announce(message) {
  const live = document.getElementById('live');
  if (!live) return;
  live.textContent = '';
  // A new text node after clearing makes screen readers read it again.
  setTimeout(() => {
    live.textContent = message;
  }, 50);
}

/** Subscribes to the live feed; returns the unsubscribe function. */
function subscribe(fn) {
  state.listeners.add(fn);
  return () => state.listeners.delete(fn);
}

function startFeed() {
  if (state.feed) state.feed.close();
  let opened = false;
  const tell = (ev) => {
    for (const fn of state.listeners) {
      try {
        fn(ev);
      } catch (err) {
        console.error(err);
      }
    }
  };
  state.feed = stream('/v1/events', {
    onEvent: (ev) => {
      if (ev.event === 'approval_requested' && ev.data) {
        announce(`New approval waiting: ${ev.data.question || ev.data.capability || ''}`);
      }
      if (ev.event === 'reload' && ev.data && ev.data.ok === false) {
        const first = (ev.data.errors || [])[0];
        announce(first ? `Load error: ${first.file}:${first.line}:${first.column}: ${first.message}` : 'Scripts failed to load');
      }
      tell(ev);
    },
    onOpen: () => {
      setFeedStatus('live');
      // Back after a gap (the server ends a stream every 10 min): what happened meanwhile
      // was not heard, so every view reloads as after a lag.
      if (opened) tell({ event: 'lagged', data: {} });
      opened = true;
    },
    onError: () => setFeedStatus('reconnecting'),
  });
}

function setFeedStatus(text) {
  const node = document.getElementById('feed-status');
  if (node) node.textContent = text === 'live' ? 'live' : 'reconnecting…';
}

function renderNav() {
  const nav = document.getElementById('nav');
  clear(nav);
  const list = el('ul');
  for (const [route, label] of ROUTES) {
    list.append(el('li', {}, el('a', { href: `#/${route}`, testid: `nav-${route}`, 'data-route': route }, label)));
  }
  nav.append(list);
}

function renderWho() {
  const who = document.getElementById('who');
  clear(who);
  if (!state.me) return;
  if (state.me.open) {
    who.append(el('span', { testid: 'who-actor' }, 'open server (loopback)'));
  } else {
    who.append(el('span', { testid: 'who-actor' }, `signed in as ${state.me.actor ?? '(nobody)'}`));
    who.append(' ', el('button', { type: 'button', class: 'link', testid: 'sign-out', on: { click: signOut } }, 'Sign out'));
  }
  who.append(' ', el('span', { id: 'feed-status', class: 'feed', 'aria-label': 'live feed status' }, '…'));
}

function signOut() {
  clearToken();
  state.me = null;
  if (state.feed) state.feed.close();
  state.feed = null;
  boot();
}

function renderSignIn(message) {
  const main = document.getElementById('main');
  clear(main);
  const input = el('input', { id: 'token', type: 'password', name: 'token', autocomplete: 'current-password', required: true, testid: 'token-input' });
  const error = el('p', { id: 'signin-error', class: 'error', role: 'alert', testid: 'signin-error' }, message || '');
  const form = el(
    'form',
    { class: 'card signin', testid: 'signin-form', 'aria-labelledby': 'signin-title' },
    el('h1', { id: 'signin-title' }, 'Sign in to kiln'),
    el('p', {}, 'Paste the bearer token kiln serve was given for you. It stays in this tab only.'),
    el('label', { for: 'token' }, 'Access token'),
    input,
    el('div', { class: 'actions' }, el('button', { type: 'submit', testid: 'sign-in' }, 'Sign in')),
    error,
  );
  if (message) input.setAttribute('aria-describedby', 'signin-error');
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    setToken(value);
    boot();
  });
  main.append(form);
  input.focus();
}

function route() {
  const hash = location.hash || '#/runs';
  if (!hash.startsWith('#/')) return null;
  const parts = hash.slice(2).split('/').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch (_) {
      return p;
    }
  });
  return parts;
}

function render() {
  if (!state.me) return;
  const parts = route();
  if (!parts) return;
  const main = document.getElementById('main');
  if (state.cleanup) {
    try {
      state.cleanup();
    } catch (err) {
      console.error(err);
    }
  }
  state.cleanup = null;
  // Who may see which page changes with the signed-in actor and a reload: ask again.
  forgetApps();
  clear(main);
  const [name, arg] = parts;
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.route === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const ctx = { me: state.me, subscribe, announce };
  const views = {
    runs: () => (arg ? renderTimeline(main, ctx, arg) : renderRuns(main, ctx)),
    approvals: () => renderApprovals(main, ctx),
    tools: () => (arg ? renderTool(main, ctx, arg) : renderTools(main, ctx)),
    chat: () => renderChat(main, ctx),
    scripts: () => renderScripts(main, ctx),
  };
  const view = views[name];
  if (!view) {
    main.append(el('h1', {}, 'Not found'), el('p', {}, 'No such page. '), el('a', { href: '#/runs' }, 'Go to the runs'));
    return;
  }
  state.cleanup = view() || null;
}

async function boot() {
  const main = document.getElementById('main');
  try {
    state.me = await api('/v1/me');
  } catch (err) {
    state.me = null;
    renderWho();
    if (err instanceof ApiError && err.status === 401) {
      renderSignIn(token() ? 'That token was not accepted.' : '');
      if (token()) clearToken();
      return;
    }
    clear(main);
    main.append(el('h1', {}, 'kiln is not answering'), el('p', { class: 'error', role: 'alert' }, describe(err)));
    return;
  }
  renderWho();
  startFeed();
  render();
}

window.addEventListener('hashchange', () => {
  if (!route()) {
    // "#main" (the skip link): focus the content, keep the page.
    document.getElementById('main').focus();
    return;
  }
  render();
  document.getElementById('main').focus({ preventScroll: true });
});

renderNav();
boot();
