// Runs: the live list (filters agent/status/actor, refreshed from the live feed) and one run's
// timeline (rounds, tool calls with nested calls, approvals, output, cost, trace link).

import { api, clear, describe, el, ms, notesView, pretty, safeUrl, when } from './api.js';
import { appsIndex, asCallResult, mountApp } from './apps.js';

// The tools with a page (MCP Apps) while a timeline shows, and the apps it opened.
let pages = {};
const openApps = new Set();

const STATUSES = ['running', 'awaiting_approval', 'completed', 'failed', 'cancelled', 'interrupted'];

function statusBadge(status) {
  return el('span', { class: `badge status-${String(status).replace(/[^a-z_]/g, '')}`, testid: 'run-status' }, String(status ?? '–').replace('_', ' '));
}

function tokens(input, output) {
  return `${input ?? 0} in / ${output ?? 0} out`;
}

function cost(usd) {
  return usd === null || usd === undefined ? '–' : `$${Number(usd).toFixed(4)}`;
}

/** Debounces `fn` by `wait` ms. */
function debounce(fn, wait) {
  let t = null;
  return () => {
    clearTimeout(t);
    t = setTimeout(fn, wait);
  };
}

function filterField(id, label, control) {
  return el('div', { class: 'field' }, el('label', { for: id }, label), control);
}

/** The runs list. Returns its cleanup. */
export function renderRuns(main, ctx) {
  const params = new URLSearchParams();
  const agent = el('input', { id: 'f-agent', name: 'agent', type: 'text', testid: 'filter-agent', autocomplete: 'off' });
  const actor = el('input', { id: 'f-actor', name: 'actor', type: 'text', testid: 'filter-actor', autocomplete: 'off' });
  const status = el('select', { id: 'f-status', name: 'status', testid: 'filter-status' }, el('option', { value: '' }, 'any'));
  for (const s of STATUSES) status.append(el('option', { value: s }, s.replace('_', ' ')));
  const form = el(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter runs', testid: 'run-filters' },
    filterField('f-agent', 'Agent', agent),
    filterField('f-status', 'Status', status),
    filterField('f-actor', 'Actor', actor),
    el('div', { class: 'field' }, el('button', { type: 'submit', testid: 'filter-apply' }, 'Filter')),
  );
  const note = el('p', { class: 'muted', role: 'status', testid: 'runs-note' });
  const body = el('tbody', { testid: 'runs-body' });
  const table = el(
    'table',
    { testid: 'runs-table', class: 'nowrap' },
    el('caption', { class: 'sr-only' }, 'Runs, newest first'),
    el('thead', {}, el('tr', {}, ...['Run', 'Agent', 'Status', 'Actor', 'Started', 'Took', 'Rounds', 'Tokens', 'Cost', 'Waiting'].map((h) => el('th', { scope: 'col' }, h)))),
    body,
  );
  main.append(el('h1', {}, 'Runs'), form, note, el('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Runs table' }, table));

  let alive = true;
  const load = async () => {
    for (const [k, input] of [['agent', agent], ['status', status], ['actor', actor]]) {
      if (input.value.trim()) params.set(k, input.value.trim());
      else params.delete(k);
    }
    params.set('limit', '100');
    try {
      const data = await api(`/v1/runs?${params}`);
      if (!alive) return;
      const runs = Array.isArray(data && data.runs) ? data.runs : [];
      clear(body);
      for (const r of runs) body.append(runRow(r));
      note.textContent = runs.length ? `${runs.length} run${runs.length === 1 ? '' : 's'}` : 'No runs yet.';
      note.classList.remove('error');
    } catch (err) {
      if (!alive) return;
      note.textContent = `Could not list runs: ${describe(err)}`;
      note.classList.add('error');
    }
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    load();
  });
  const soon = debounce(load, 250);
  const off = ctx.subscribe((ev) => {
    if (['run_started', 'run_ended', 'approval_requested', 'approval_decided', 'lagged'].includes(ev.event)) soon();
  });
  load();
  return () => {
    alive = false;
    off();
  };
}

function runRow(r) {
  const took = r.ended_at && r.started_at ? ms((r.ended_at - r.started_at) * 1000) : r.status === 'running' ? 'running' : '–';
  return el(
    'tr',
    { testid: 'run-row', 'data-run-id': r.id, 'data-status': r.status },
    el('td', {}, el('a', { href: `#/runs/${encodeURIComponent(r.id)}`, testid: 'run-link' }, String(r.id))),
    el('td', {}, String(r.agent ?? '')),
    el('td', {}, statusBadge(r.status), r.error ? el('span', { class: 'sr-only' }, ` error: ${r.error}`) : null),
    el('td', {}, String(r.actor ?? '–')),
    el('td', {}, when(r.started_at)),
    el('td', {}, took),
    el('td', { class: 'num' }, String(r.rounds ?? 0)),
    el('td', { class: 'num' }, tokens(r.input_tokens, r.output_tokens)),
    el('td', { class: 'num' }, cost(r.cost_usd)),
    el('td', { class: 'num' }, r.waiting ? el('a', { href: '#/approvals', class: 'badge status-awaiting_approval' }, `${r.waiting} waiting`) : '0'),
  );
}

function facts(pairs) {
  const dl = el('dl', { class: 'facts', testid: 'timeline-facts' });
  for (const [k, v] of pairs) {
    if (v === null || v === undefined || v === '') continue;
    dl.append(el('div', {}, el('dt', {}, k), el('dd', {}, v)));
  }
  return dl;
}

function block(label, value, testid) {
  return el('div', { class: 'block', testid }, el('h3', {}, label), el('pre', { class: 'json' }, pretty(value)));
}

/** A tool call (and its nested calls, indented under it). */
function callItem(call) {
  const failed = call.error && typeof call.error === 'object';
  const li = el(
    'li',
    { class: failed ? 'call failed' : 'call', testid: 'tool-call', 'data-call-id': call.call_id, 'data-tool': call.name },
    el('div', { class: 'call-head' }, el('strong', { class: 'tool-name' }, String(call.name)), ' ', el('span', { class: 'muted' }, ms(call.duration_ms)), failed ? el('span', { class: 'badge status-failed' }, String(call.error.kind ?? 'error')) : null),
    el('details', { class: 'args', open: true }, el('summary', {}, 'arguments'), el('pre', { class: 'json', testid: 'call-args' }, pretty(call.args))),
  );
  if (failed) li.append(el('p', { class: 'error', testid: 'call-error' }, `${call.error.kind ?? 'error'}: ${call.error.message ?? ''}`));
  else if (call.result !== null && call.result !== undefined) li.append(el('p', { class: 'label' }, 'result'), el('pre', { class: 'json result', testid: 'call-result' }, pretty(call.result)));
  if (Array.isArray(call.notes) && call.notes.length) li.append(notesView(call.notes));
  if (pages[call.name] && (failed || (call.result !== null && call.result !== undefined))) li.append(appButton(call, failed));
  const nested = Array.isArray(call.nested) ? call.nested : [];
  if (nested.length) {
    li.append(el('ul', { class: 'nested', 'aria-label': `calls made by ${call.name}` }, nested.map(callItem)));
  }
  return li;
}

/** The button that shows a finished call in its tool's page (MCP Apps). */
function appButton(call, failed) {
  const button = el('button', { type: 'button', class: 'secondary', testid: 'show-app' }, `Show ${call.name}'s app`);
  button.addEventListener('click', () => {
    const result = asCallResult(call.result, failed ? `${call.error.kind ?? 'error'}: ${call.error.message ?? ''}` : null);
    const app = mountApp(call.name, call.args, Promise.resolve(result));
    openApps.add(app);
    button.replaceWith(app.node);
  });
  return button;
}

function roundSection(r) {
  const calls = Array.isArray(r.tool_calls) ? r.tool_calls : [];
  return el(
    'li',
    { class: 'round', testid: 'round', 'data-round': r.round },
    el('h3', {}, `Round ${r.round}`),
    el('p', { class: 'meta' }, [r.provider, r.model].filter(Boolean).join(' · ') || '–', ' · ', tokens(r.input_tokens, r.output_tokens), ' · ', ms(r.duration_ms), r.stop_reason ? ` · ${r.stop_reason}` : ''),
    calls.length ? el('ul', { class: 'calls' }, calls.map(callItem)) : el('p', { class: 'muted' }, 'No tool calls.'),
  );
}

function decisionText(d) {
  if (!d) return 'waiting';
  if (d.decision === 'approve') return 'approved';
  return d.reason ? `denied: ${d.reason}` : 'denied';
}

function approvalItem(a) {
  return el(
    'li',
    { class: 'approval', testid: 'timeline-approval', 'data-approval-id': a.id },
    el('p', {}, el('strong', {}, String(a.capability ?? '')), ' — ', String(a.question ?? '')),
    a.args !== null && a.args !== undefined ? el('pre', { class: 'json' }, pretty(a.args)) : null,
    el('p', { class: 'meta' }, `asked ${when(a.asked_at)} · `, el('span', { testid: 'approval-decision', class: a.decision ? `decision-${a.decision.decision}` : 'decision-waiting' }, decisionText(a.decision)), a.decision ? null : [' · ', el('a', { href: '#/approvals' }, 'answer in the inbox')]),
  );
}

/** The agent's budget limits that are set ("max_tokens 4000 · max_cost_usd 0.5"), or null. */
function budgetText(budget) {
  if (!budget || typeof budget !== 'object') return null;
  const set = Object.entries(budget).filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object');
  return set.length ? set.map(([k, v]) => `${k.replace(/_/g, ' ')} ${v}`).join(' · ') : null;
}

function timelineView(t) {
  const traceUrl = safeUrl(t.trace_url);
  const took = t.ended_at && t.started_at ? ms((t.ended_at - t.started_at) * 1000) : '–';
  const parts = [
    el('p', {}, el('a', { href: '#/runs' }, '← all runs')),
    el('h1', {}, `Run `, el('code', { testid: 'timeline-id' }, String(t.id)), ' ', statusBadge(t.status)),
    facts([
      ['Agent', String(t.agent ?? '')],
      ['Actor', t.actor ?? null],
      ['Model', [t.provider, t.model].filter(Boolean).join(' · ')],
      ['Started', when(t.started_at)],
      ['Took', took],
      ['Tokens', tokens(t.usage && t.usage.input_tokens, t.usage && t.usage.output_tokens)],
      ['Cost', cost(t.cost_usd)],
      ['Budget', budgetText(t.budget)],
      ['Repairs', t.repairs ? String(t.repairs) : null],
      ['Trace', t.trace_id ? (traceUrl ? el('a', { href: traceUrl, rel: 'noopener noreferrer', target: '_blank', testid: 'trace-link' }, String(t.trace_id)) : String(t.trace_id)) : null],
    ]),
  ];
  if (t.error) parts.push(el('p', { class: 'error', role: 'alert', testid: 'timeline-error' }, typeof t.error === 'string' ? t.error : pretty(t.error)));
  if (t.prompt) parts.push(el('section', { 'aria-labelledby': 'h-prompt' }, el('h2', { id: 'h-prompt' }, 'Prompt'), el('pre', { class: 'text', testid: 'timeline-prompt' }, pretty(t.prompt))));
  const rounds = Array.isArray(t.rounds) ? t.rounds : [];
  parts.push(el('section', { 'aria-labelledby': 'h-rounds' }, el('h2', { id: 'h-rounds' }, `Rounds (${rounds.length})`), el('ol', { class: 'rounds', testid: 'rounds' }, rounds.map(roundSection))));
  const approvals = Array.isArray(t.approvals) ? t.approvals : [];
  if (approvals.length) {
    parts.push(el('section', { 'aria-labelledby': 'h-approvals' }, el('h2', { id: 'h-approvals' }, 'Approvals'), el('ul', { class: 'approvals' }, approvals.map(approvalItem))));
  }
  if (t.answer) parts.push(el('section', { 'aria-labelledby': 'h-answer' }, el('h2', { id: 'h-answer' }, 'Answer'), el('p', { class: 'answer', testid: 'timeline-answer' }, String(t.answer))));
  if (t.output !== null && t.output !== undefined) parts.push(block('Output', t.output, 'timeline-output'));
  return parts;
}

/** One run's timeline; refreshed while it runs. Returns its cleanup. */
export function renderTimeline(main, ctx, id) {
  const holder = el('div', { testid: 'timeline', 'aria-busy': 'true' }, el('p', {}, 'Loading…'));
  main.append(holder);
  let alive = true;
  let timer = null;
  const load = async () => {
    clearTimeout(timer);
    try {
      const [t, info] = await Promise.all([api(`/v1/runs/${encodeURIComponent(id)}/timeline`), appsIndex().catch(() => null)]);
      if (!alive) return;
      pages = (info && info.tools) || {};
      closeApps();
      clear(holder).append(...timelineView(t));
      holder.setAttribute('aria-busy', 'false');
      holder.dataset.status = t.status;
      if (t.status === 'running' || t.status === 'awaiting_approval') timer = setTimeout(load, 2000);
    } catch (err) {
      if (!alive) return;
      clear(holder).append(el('h1', {}, 'Run ', el('code', {}, id)), el('p', { class: 'error', role: 'alert', testid: 'timeline-failed' }, describe(err)));
      holder.setAttribute('aria-busy', 'false');
    }
  };
  const FINAL = ['completed', 'failed', 'cancelled', 'interrupted'];
  const off = ctx.subscribe((ev) => {
    const d = ev.data || {};
    // A finished run shown already does not change: no need to draw it again.
    if (FINAL.includes(holder.dataset.status) && ev.event !== 'lagged') return;
    if (d.id === id || d.run === id || ev.event === 'lagged') load();
  });
  load();
  return () => {
    alive = false;
    clearTimeout(timer);
    off();
    closeApps();
  };
}

function closeApps() {
  for (const app of openApps) app.close();
  openApps.clear();
}
