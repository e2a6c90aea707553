// The console as an MCP Apps host: a tool's page rendered beside its call, as the extension's
// web hosts must. The page runs in a frame of the sandbox origin (kiln's second port: no API,
// no token, no cookie), whose proxy shows it in an inner frame with an opaque origin under the
// CSP the page declares. The console speaks the bridge (JSON-RPC over postMessage) only with
// that frame and only with that origin: `ui/initialize` with the host context, then the tool's
// input and result; the page's `tools/call` goes to `POST /v1/apps/{tool}/call`, which is the
// console's own call (the signed-in actor's grants, approvals in the inbox, the run log).

import { api, describe, el } from './api.js';

const PROTOCOL = '2026-01-26';
const MAX_HEIGHT = 900;

let appsInfo = null;

/** Which tools have a page (and the sandbox's port), asked once per sign-in. */
export function appsIndex() {
  if (!appsInfo) appsInfo = api('/v1/apps').catch((err) => { appsInfo = null; throw err; });
  return appsInfo;
}

/** Forgets what appsIndex learnt (a reload may give or take pages). */
export function forgetApps() {
  appsInfo = null;
}

/** A kiln value as MCP's CallToolResult (what the page gets as `ui/notifications/tool-result`). */
export function asCallResult(value, error) {
  if (error) return { content: [{ type: 'text', text: String(error) }], isError: true };
  if (value && typeof value === 'object' && Array.isArray(value.$content)) return { content: value.$content };
  if (typeof value === 'string') return { content: [{ type: 'text', text: value }] };
  const out = { content: [{ type: 'text', text: JSON.stringify(value) }] };
  if (value && typeof value === 'object' && !Array.isArray(value)) out.structuredContent = value;
  return out;
}

function theme() {
  return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

function hostContext(tool) {
  return {
    toolInfo: { tool },
    theme: theme(),
    displayMode: 'inline',
    availableDisplayModes: ['inline'],
    containerDimensions: { maxHeight: MAX_HEIGHT },
    locale: navigator.language,
    timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
    platform: 'web',
  };
}

/**
 * Renders tool `name`'s page for one call: `args` its input, `result` a CallToolResult (or a
 * promise of one, for a call still running). Returns `{ node, close }`.
 */
export function mountApp(name, args, result) {
  const status = el('p', { class: 'muted', testid: 'app-status', role: 'status' }, 'Loading the app…');
  const log = el('ul', { class: 'app-log', testid: 'app-log', 'aria-label': 'what the app logged' });
  const node = el('section', { class: 'app', testid: 'app', 'data-tool': name, 'aria-label': `App of ${name}` }, status);
  let frame = null;
  let closed = false;
  let initialized = false;
  let origin = null;
  let nextId = 1;
  const pending = new Map();

  const post = (msg) => {
    if (frame && frame.contentWindow && origin) frame.contentWindow.postMessage(msg, origin);
  };
  const answer = (id, res) => post({ jsonrpc: '2.0', id, result: res });
  const fail = (id, code, message) => post({ jsonrpc: '2.0', id, error: { code, message } });
  const notify = (method, params) => post({ jsonrpc: '2.0', method, params });

  const deliver = async () => {
    notify('ui/notifications/tool-input', { arguments: args || {} });
    try {
      const done = await result;
      if (!closed) notify('ui/notifications/tool-result', done);
    } catch (err) {
      if (!closed) notify('ui/notifications/tool-cancelled', { reason: describe(err) });
    }
  };

  const onRequest = async (msg, page) => {
    const { id, method, params } = msg;
    const p = params && typeof params === 'object' ? params : {};
    switch (method) {
      case 'ui/initialize':
        return answer(id, {
          protocolVersion: PROTOCOL,
          hostInfo: { name: 'kiln console', version: '1' },
          hostCapabilities: { serverTools: {}, logging: {}, openLinks: {}, sandbox: { csp: (page.meta && page.meta.csp) || {} } },
          hostContext: hostContext(page.tool),
        });
      case 'ping':
        return answer(id, {});
      case 'tools/call':
        try {
          const called = await api(`/v1/apps/${encodeURIComponent(name)}/call`, { method: 'POST', body: { name: p.name, arguments: p.arguments || {} } });
          return closed ? null : answer(id, called);
        } catch (err) {
          return fail(id, -32000, describe(err));
        }
      case 'ui/open-link': {
        const url = typeof p.url === 'string' ? p.url : '';
        if (!/^https?:\/\//i.test(url)) return fail(id, -32602, 'only http and https links open');
        window.open(url, '_blank', 'noopener,noreferrer');
        return answer(id, {});
      }
      case 'ui/request-display-mode':
        return answer(id, { mode: 'inline' });
      case 'ui/message':
      case 'ui/update-model-context':
        return fail(id, -32000, 'the console has no conversation for this app to write to');
      default:
        return fail(id, -32601, `the console does not offer ${String(method)}`);
    }
  };

  const onMessage = (page) => (event) => {
    if (!frame || event.source !== frame.contentWindow || event.origin !== origin) return;
    const msg = event.data;
    if (!msg || msg.jsonrpc !== '2.0' || typeof msg !== 'object') return;
    if (msg.method === 'ui/notifications/sandbox-proxy-ready') {
      const meta = page.meta || {};
      notify('ui/notifications/sandbox-resource-ready', { html: page.html, csp: meta.csp || {}, permissions: meta.permissions || {} });
    } else if (msg.method === 'ui/notifications/initialized') {
      if (initialized) return;
      initialized = true;
      status.textContent = 'App ready';
      deliver();
    } else if (msg.method === 'ui/notifications/size-changed') {
      const h = Number(msg.params && msg.params.height);
      if (Number.isFinite(h) && h > 0) frame.style.height = `${Math.min(Math.ceil(h), MAX_HEIGHT)}px`;
    } else if (msg.method === 'notifications/message') {
      const text = msg.params ? `${msg.params.level ?? 'info'}: ${typeof msg.params.data === 'string' ? msg.params.data : JSON.stringify(msg.params.data)}` : '';
      log.append(el('li', {}, text.slice(0, 500)));
      while (log.childElementCount > 20) log.firstElementChild.remove();
    } else if (msg.id !== undefined && typeof msg.method === 'string') {
      onRequest(msg, page);
    } else if (msg.id !== undefined && pending.has(msg.id)) {
      const done = pending.get(msg.id);
      pending.delete(msg.id);
      done();
    }
  };

  let listener = null;
  appsIndex()
    .then((info) => api(`/v1/apps/${encodeURIComponent(name)}`).then((page) => [info, page]))
    .then(([info, page]) => {
      if (closed) return;
      const port = page.sandbox_port ?? (info && info.sandbox_port);
      if (!port) throw new Error('this server has no sandbox for apps (the console is off?)');
      origin = `${location.protocol}//${location.hostname}:${port}`;
      const csp = JSON.stringify((page.meta && page.meta.csp) || {});
      const src = `${origin}/sandbox?host=${encodeURIComponent(location.origin)}&csp=${encodeURIComponent(csp)}`;
      listener = onMessage(page);
      window.addEventListener('message', listener);
      frame = el('iframe', {
        class: page.meta && page.meta.prefersBorder === false ? 'app-frame bare' : 'app-frame',
        testid: 'app-frame',
        title: `App of ${name}`,
        sandbox: 'allow-scripts allow-same-origin',
        referrerpolicy: 'no-referrer',
        src,
      });
      status.textContent = 'Starting the app…';
      node.append(frame, el('details', { class: 'app-logs' }, el('summary', {}, 'App log'), log));
    })
    .catch((err) => {
      status.textContent = `The app could not start: ${describe(err)}`;
      status.className = 'error';
      status.setAttribute('role', 'alert');
    });

  const close = () => {
    if (closed) return;
    if (initialized) {
      const id = nextId++;
      pending.set(id, () => {});
      post({ jsonrpc: '2.0', id, method: 'ui/resource-teardown', params: { reason: 'the view closed' } });
    }
    closed = true;
    if (listener) window.removeEventListener('message', listener);
  };
  return { node, close };
}
