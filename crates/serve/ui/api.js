// The console's talk with kiln: fetch with the bearer token kept in sessionStorage, errors as
// objects, server-sent events read over fetch (EventSource cannot send Authorization), and a
// small DOM builder that only ever sets text (never HTML) from data.

export const TOKEN_KEY = 'kiln.token';

/** The token of this tab's session, or null. */
export function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch (_) {
    return null;
  }
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** An error answer from kiln: its HTTP status and the OpenAI-shaped `error` object. */
export class ApiError extends Error {
  constructor(status, error) {
    const e = error && typeof error === 'object' ? error : {};
    super(typeof e.message === 'string' ? e.message : `HTTP ${status}`);
    this.status = status;
    this.code = e.code ?? null;
    this.param = e.param ?? null;
    this.fields = Array.isArray(e.fields) ? e.fields : [];
    this.error = e;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const t = token();
  if (t) h.set('Authorization', `Bearer ${t}`);
  return h;
}

/** A raw fetch with the bearer token; no status check. */
export function request(path, { method = 'GET', body, signal, accept } = {}) {
  const init = { method, signal, headers: headers(), credentials: 'omit', cache: 'no-store' };
  if (accept) init.headers.set('Accept', accept);
  if (body !== undefined) {
    init.headers.set('Content-Type', 'application/json');
    init.body = JSON.stringify(body);
  }
  return fetch(path, init);
}

async function parse(res) {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (_) {
    return { text };
  }
}

/** Calls kiln and returns the JSON answer; throws an ApiError for a non-2xx status. */
export async function api(path, options = {}) {
  const res = await request(path, options);
  const data = await parse(res);
  if (!res.ok) {
    throw new ApiError(res.status, data && data.error ? data.error : { message: `HTTP ${res.status}` });
  }
  return data;
}

/** The text of a GET (for /metrics). */
export async function text(path, options = {}) {
  const res = await request(path, options);
  if (!res.ok) throw new ApiError(res.status, { message: `HTTP ${res.status}` });
  return res.text();
}

/** Splits an SSE byte stream's text into events: {event, data} with data parsed as JSON. */
export function sseParser(onEvent) {
  let buffer = '';
  let name = 'message';
  let data = [];
  const line = (l) => {
    if (l === '') {
      if (data.length) {
        const raw = data.join('\n');
        let parsed = raw;
        try {
          parsed = JSON.parse(raw);
        } catch (_) {
          // keep the text
        }
        onEvent({ event: name, data: parsed });
      }
      name = 'message';
      data = [];
      return;
    }
    if (l.startsWith(':')) return;
    const colon = l.indexOf(':');
    const field = colon < 0 ? l : l.slice(0, colon);
    let value = colon < 0 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') name = value || 'message';
    else if (field === 'data') data.push(value);
  };
  return (chunk) => {
    buffer += chunk;
    let i;
    while ((i = buffer.search(/\r\n|\r|\n/)) >= 0) {
      const sep = buffer[i] === '\r' && buffer[i + 1] === '\n' ? 2 : 1;
      line(buffer.slice(0, i));
      buffer = buffer.slice(i + sep);
    }
  };
}

/**
 * Reads an event stream at `path` with fetch + ReadableStream; calls `onEvent({event, data})`.
 * Reconnects 2 s after the stream drops, unless closed or `done(event)` said it is over.
 * `onOpen()` runs at each (re)connection, `onError(err)` on each failure.
 * Returns {close()}.
 */
export function stream(path, { onEvent, onOpen, onError, done } = {}) {
  let closed = false;
  let finished = false;
  let controller = null;
  let timer = null;
  const connect = async () => {
    if (closed) return;
    controller = new AbortController();
    try {
      const res = await request(path, { signal: controller.signal, accept: 'text/event-stream' });
      if (!res.ok) {
        const data = await parse(res);
        throw new ApiError(res.status, data && data.error);
      }
      if (onOpen) onOpen();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const feed = sseParser((ev) => {
        if (closed) return;
        if (onEvent) onEvent(ev);
        if (done && done(ev)) finished = true;
      });
      for (;;) {
        const { value, done: end } = await reader.read();
        if (end) break;
        feed(decoder.decode(value, { stream: true }));
        if (closed || finished) {
          controller.abort();
          break;
        }
      }
    } catch (err) {
      if (closed) return;
      if (onError) onError(err);
      // An answer that will not change (401/403/404) is not retried.
      if (err instanceof ApiError && [401, 403, 404].includes(err.status)) return;
    }
    if (!closed && !finished) timer = setTimeout(connect, 2000);
  };
  connect();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (controller) controller.abort();
    },
  };
}

/**
 * Builds an element: `el('p', {class: 'x', testid: 'y', on: {click: f}}, 'text', child)`.
 * Strings become text nodes; nothing is ever parsed as HTML.
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'testid') node.dataset.testid = v;
    else if (k === 'text') node.textContent = String(v);
    else if (k === 'on') for (const [ev, f] of Object.entries(v)) node.addEventListener(ev, f);
    else if (k === 'value') node.value = v;
    else if (k === 'checked') node.checked = Boolean(v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  append(node, children);
  return node;
}

/** Appends children (nodes, strings, arrays, skipping null/undefined/false). */
export function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

/** Empties a node. */
export function clear(node) {
  while (node.firstChild) node.firstChild.remove();
  return node;
}

/** JSON pretty-printed for a <pre>. */
export function pretty(value) {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch (_) {
    return String(value);
  }
}

/** A duration in ms as text ("820 ms", "3.2 s", "2 min 5 s"). */
export function ms(value) {
  if (value === null || value === undefined || Number.isNaN(Number(value))) return '–';
  const n = Number(value);
  if (n < 1000) return `${Math.round(n)} ms`;
  return seconds(n / 1000);
}

/** Seconds as text. */
export function seconds(s) {
  const n = Math.max(0, Number(s) || 0);
  if (n < 60) return `${n < 10 ? n.toFixed(1) : Math.round(n)} s`;
  const whole = Math.round(n);
  const m = Math.floor(whole / 60);
  if (m < 60) return `${m} min ${whole % 60} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** A time (seconds since the epoch) as local text. */
export function when(epoch) {
  if (epoch === null || epoch === undefined) return '–';
  const d = new Date(Number(epoch) * 1000);
  if (Number.isNaN(d.getTime())) return '–';
  return d.toLocaleString();
}

/** Only http(s) URLs may become links (never javascript: or data:). */
export function safeUrl(url) {
  if (typeof url !== 'string') return null;
  try {
    const u = new URL(url, location.href);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch (_) {
    return null;
  }
}

/** A short message for an error of any kind. */
export function describe(err) {
  if (err instanceof ApiError) return `${err.status}: ${err.message}`;
  return err && err.message ? err.message : String(err);
}

/**
 * What a tool told its caller while it ran (progress, emitted events) as a block for its call:
 * a progress bar for the latest progress and one line per event. `notes` are the run log's
 * (`{kind: 'progress'|'emit', ...}`); `prefix` names the test ids (`chat-`, '').
 */
export function notesView(notes, prefix = '') {
  const list = Array.isArray(notes) ? notes : [];
  const box = el('div', { class: 'notes', testid: `${prefix}tool-notes` });
  const last = [...list].reverse().find((n) => n && n.kind === 'progress');
  if (last) box.append(progressBar(last, prefix));
  const events = list.filter((n) => n && n.kind === 'emit');
  if (events.length) {
    box.append(el('ul', { class: 'events', 'aria-label': 'events the tool sent' }, events.map((n) => eventItem(n.name, n.value, prefix))));
  }
  return box;
}

/** A progress bar for `{done, total, message}`. */
export function progressBar(p, prefix = '') {
  const attrs = { value: String(p.done ?? 0), testid: `${prefix}tool-progress` };
  if (typeof p.total === 'number' && p.total > 0) attrs.max = String(p.total);
  const label = `${p.done ?? 0}${typeof p.total === 'number' ? ` / ${p.total}` : ''}${p.message ? ` ${p.message}` : ''}`;
  return el('div', { class: 'progress' }, el('progress', { ...attrs, 'aria-label': label }), el('span', { class: 'muted' }, label));
}

/** One emitted event: its name and value. */
export function eventItem(name, value, prefix = '') {
  return el('li', { testid: `${prefix}tool-event`, 'data-event': String(name ?? '') }, el('strong', {}, String(name ?? '')), ' ', el('code', {}, typeof value === 'string' ? value : JSON.stringify(value)));
}
