// The scripts' health: loaded files with their tools, agents and pipelines, load errors at
// file:line:col, reloads as they happen, MCP mounts, and /metrics' main figures as small
// charts (polled every 5 s while this page is open, kept in memory as a short series).

import { api, clear, describe, el, text, when } from './api.js';

const SVG = 'http://www.w3.org/2000/svg';
const KEEP = 36;
/** Samples kept across visits of the page: {at, values}. */
const series = [];

const FIGURES = [
  ['started', 'Runs started'],
  ['finished', 'Runs finished'],
  ['errors', 'Run errors'],
  ['active', 'Active runs'],
  ['queue', 'Queue depth'],
  ['latency', 'Model latency (s, mean)'],
];

/** Sums of Prometheus samples by metric name (and outcome for runs finished). */
export function parseMetrics(body) {
  const sums = {};
  for (const line of String(body).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)/);
    if (!m) continue;
    const value = Number(m[3]);
    if (!Number.isFinite(value)) continue;
    sums[m[1]] = (sums[m[1]] || 0) + value;
    if (m[1] === 'kiln_runs_finished_total' && m[2] && !/outcome="ok"/.test(m[2])) {
      sums.errors = (sums.errors || 0) + value;
    }
  }
  return sums;
}

function figures(sums, previous) {
  const count = sums.kiln_model_request_duration_seconds_count || 0;
  const sum = sums.kiln_model_request_duration_seconds_sum || 0;
  let latency = count ? sum / count : 0;
  if (previous && count > previous.count) latency = (sum - previous.sum) / (count - previous.count);
  return {
    started: sums.kiln_runs_started_total || 0,
    finished: sums.kiln_runs_finished_total || 0,
    errors: sums.errors || 0,
    active: sums.kiln_runs_active || 0,
    queue: sums.kiln_queue_depth || 0,
    latency,
    count,
    sum,
  };
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** A small line chart of `values` (an SVG with a title; its latest value as text beside it). */
function chart(key, label, values) {
  const w = 160;
  const h = 40;
  const max = Math.max(1e-9, ...values);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(h - 2 - (v / max) * (h - 4)).toFixed(1)}`).join(' ');
  const latest = values.length ? values[values.length - 1] : 0;
  const shown = key === 'latency' ? latest.toFixed(3) : String(Math.round(latest));
  const id = `chart-${key}`;
  const graphic = svg('svg', { viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: 'img', 'aria-labelledby': `${id}-t` });
  const title = svg('title', { id: `${id}-t` });
  title.textContent = `${label}: ${shown} now, ${values.length} samples`;
  graphic.append(title, svg('line', { x1: 0, y1: h - 1, x2: w, y2: h - 1, class: 'axis' }));
  if (values.length > 1) graphic.append(svg('polyline', { points, class: 'line', fill: 'none' }));
  else graphic.append(svg('circle', { cx: w / 2, cy: h / 2, r: 2, class: 'dot' }));
  return el('figure', { class: 'chart', testid: 'metric-chart', 'data-metric': key }, el('figcaption', {}, label, ': ', el('strong', { testid: 'metric-value' }, shown)), graphic);
}

function fileRow(f) {
  const errors = Array.isArray(f.errors) ? f.errors : [];
  const list = (xs) => (Array.isArray(xs) && xs.length ? xs.map(String).join(', ') : '–');
  return el(
    'tr',
    { testid: 'script-file', 'data-path': String(f.path ?? ''), class: errors.length ? 'has-error' : null },
    el('td', { class: 'mono' }, String(f.path ?? '')),
    el('td', {}, list(f.tools)),
    el('td', {}, list(f.agents)),
    el('td', {}, list(f.pipelines)),
    el('td', {}, errors.length ? el('span', { class: 'badge status-failed' }, `${errors.length} error${errors.length === 1 ? '' : 's'}`) : 'ok'),
  );
}

function loadError(e, testid = 'load-error') {
  const where = `${e.file ?? '?'}:${e.line ?? '?'}:${e.column ?? '?'}`;
  return el('li', { class: 'load-error', testid }, el('code', { testid: `${testid}-where` }, where), `: ${e.message ?? ''}`);
}

function reloadItem(r) {
  const errs = Array.isArray(r.errors) ? r.errors : [];
  return el(
    'li',
    { testid: 'reload', class: r.ok ? 'ok' : 'failed' },
    el('span', { class: `badge status-${r.ok ? 'completed' : 'failed'}` }, r.ok ? 'reloaded' : 'failed'),
    ' ',
    r.at ? `${when(r.at)} · ` : '',
    el('span', { class: 'mono' }, String(r.path ?? '')),
    r.summary ? ` — ${r.summary}` : '',
    errs.length ? el('ul', {}, errs.map((e) => loadError(e, 'reload-error'))) : null,
  );
}

/** The page. Returns its cleanup. */
export function renderScripts(main, ctx) {
  const note = el('p', { class: 'muted', role: 'status', testid: 'scripts-note' }, 'Loading…');
  const errors = el('ul', { class: 'errors', testid: 'load-errors' });
  const files = el('tbody', { testid: 'script-files' });
  const mcp = el('ul', { testid: 'mcp-mounts' });
  const reloads = el('ol', { class: 'reloads', testid: 'reloads' });
  const charts = el('div', { class: 'charts', testid: 'charts' });
  const metricsNote = el('p', { class: 'muted', testid: 'metrics-note' });
  main.append(
    el('h1', {}, 'Scripts'),
    note,
    el('section', { 'aria-labelledby': 'h-errors' }, el('h2', { id: 'h-errors' }, 'Load errors'), errors),
    el(
      'section',
      { 'aria-labelledby': 'h-files' },
      el('h2', { id: 'h-files' }, 'Files'),
      el('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Script files' }, el('table', {}, el('thead', {}, el('tr', {}, ['File', 'Tools', 'Agents', 'Pipelines', 'Health'].map((h) => el('th', { scope: 'col' }, h)))), files)),
    ),
    el('section', { 'aria-labelledby': 'h-mcp' }, el('h2', { id: 'h-mcp' }, 'MCP mounts'), mcp),
    el('section', { 'aria-labelledby': 'h-metrics' }, el('h2', { id: 'h-metrics' }, 'Metrics'), metricsNote, charts),
    el('section', { 'aria-labelledby': 'h-reloads' }, el('h2', { id: 'h-reloads' }, 'Reloads'), reloads),
  );
  let alive = true;
  const load = async () => {
    try {
      const data = await api('/v1/scripts');
      if (!alive) return;
      const list = Array.isArray(data && data.files) ? data.files : [];
      const errs = Array.isArray(data && data.errors) ? data.errors : [];
      clear(files).append(...list.map(fileRow));
      clear(errors).append(...(errs.length ? errs.map((e) => loadError(e)) : [el('li', { class: 'muted', testid: 'no-load-errors' }, 'None: every file loaded.')]));
      const mounts = Array.isArray(data && data.mcp) ? data.mcp : [];
      clear(mcp).append(
        ...(mounts.length
          ? mounts.map((m) => el('li', { testid: 'mcp-mount' }, el('strong', {}, String(m.name ?? '')), ` — ${m.status ?? ''}`, m.origin ? ` (${m.origin})` : '', Array.isArray(m.tools) ? ` (${m.tools.length} tools: ${m.tools.join(', ')})` : ''))
          : [el('li', { class: 'muted' }, 'No MCP servers mounted.')]),
      );
      const history = Array.isArray(data && data.reloads) ? data.reloads : [];
      clear(reloads).append(...(history.length ? history.map(reloadItem) : [el('li', { class: 'muted' }, 'No reloads since kiln started.')]));
      note.textContent = `${list.length} file${list.length === 1 ? '' : 's'}, ${errs.length} load error${errs.length === 1 ? '' : 's'}`;
    } catch (err) {
      if (alive) note.textContent = `Could not read the scripts: ${describe(err)}`;
    }
  };
  const drawCharts = () => {
    clear(charts);
    for (const [key, label] of FIGURES) charts.append(chart(key, label, series.map((s) => s.values[key])));
  };
  const poll = async () => {
    try {
      const body = await text('/metrics');
      if (!alive) return;
      const prev = series.length ? series[series.length - 1].values : null;
      series.push({ at: Date.now(), values: figures(parseMetrics(body), prev) });
      while (series.length > KEEP) series.shift();
      metricsNote.textContent = `Every 5 s; the last ${series.length} samples.`;
    } catch (err) {
      if (alive) metricsNote.textContent = `Could not read /metrics: ${describe(err)}`;
    }
    if (alive) drawCharts();
  };
  const timer = setInterval(poll, 5000);
  const off = ctx.subscribe((ev) => {
    if (ev.event === 'reload' || ev.event === 'lagged') load();
  });
  load();
  poll();
  return () => {
    alive = false;
    clearInterval(timer);
    off();
  };
}
