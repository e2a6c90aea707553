// Tools: the list (name, description, capabilities) and one tool's page: its schema and a
// form generated from it that calls the tool under the signed-in actor's grants.

import { api, ApiError, clear, describe, el, ms, pretty } from './api.js';
import { renderResult, schemaForm } from './form.js';
import { appsIndex, asCallResult, mountApp } from './apps.js';

function caps(list) {
  const items = Array.isArray(list) ? list : [];
  if (!items.length) return el('span', { class: 'muted' }, 'none');
  return el('ul', { class: 'chips', 'aria-label': 'capabilities' }, items.map((c) => el('li', { class: 'chip', testid: 'capability' }, String(c))));
}

/** Where a tool is defined: its file's name and line, the whole path on hover. */
function where(t) {
  if (!t.file) return '–';
  const file = String(t.file);
  const name = file.split('/').pop();
  return el('span', { title: file }, `${name}${t.line ? `:${t.line}` : ''}`);
}

/** The tools list. */
export function renderTools(main) {
  const note = el('p', { class: 'muted', role: 'status' }, 'Loading…');
  const body = el('tbody', { testid: 'tools-body' });
  main.append(
    el('h1', {}, 'Tools'),
    note,
    el(
      'div',
      { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Tools table' },
      el('table', { testid: 'tools-table' }, el('thead', {}, el('tr', {}, ['Tool', 'Description', 'Capabilities', 'Defined in'].map((h) => el('th', { scope: 'col' }, h)))), body),
    ),
  );
  let alive = true;
  api('/v1/tools')
    .then((data) => {
      if (!alive) return;
      const tools = Array.isArray(data && data.tools) ? data.tools : [];
      note.textContent = `${tools.length} tool${tools.length === 1 ? '' : 's'}`;
      for (const t of tools) {
        body.append(
          el(
            'tr',
            { testid: 'tool-row', 'data-tool': t.name },
            el('td', {}, el('a', { href: `#/tools/${encodeURIComponent(t.name)}`, testid: 'tool-link' }, String(t.name))),
            el('td', {}, String(t.description ?? '')),
            el('td', {}, caps(t.capabilities)),
            el('td', { class: 'mono' }, where(t)),
          ),
        );
      }
    })
    .catch((err) => {
      if (alive) note.textContent = `Could not list tools: ${describe(err)}`;
    });
  return () => {
    alive = false;
  };
}

/** One tool: description, capabilities, schema, and its form. */
export function renderTool(main, ctx, name) {
  const holder = el('div', { testid: 'tool-page' }, el('p', {}, 'Loading…'));
  main.append(el('p', {}, el('a', { href: '#/tools' }, '← all tools')), holder);
  let alive = true;
  let closeApp = () => {};
  api('/v1/tools')
    .then((data) => {
      if (!alive) return;
      const tools = Array.isArray(data && data.tools) ? data.tools : [];
      const tool = tools.find((t) => t.name === name);
      clear(holder);
      if (!tool) {
        holder.append(el('h1', {}, 'No such tool'), el('p', { class: 'error', role: 'alert' }, `kiln has no tool named ${name} for you.`));
        return;
      }
      const page = toolPage(tool, ctx);
      closeApp = page.closeApp;
      holder.append(...page.nodes);
    })
    .catch((err) => {
      if (alive) clear(holder).append(el('h1', {}, String(name)), el('p', { class: 'error', role: 'alert' }, describe(err)));
    });
  return () => {
    alive = false;
    closeApp();
  };
}

/** The tool's page (MCP Apps) for the call just made, when the tool has one. */
async function showApp(tool, args, res, outcome) {
  const info = await appsIndex().catch(() => null);
  if (!info || !info.tools || !info.tools[tool.name]) return null;
  const result = asCallResult(res ? res.result : null, res && res.error ? `${res.error.kind ?? 'error'}: ${res.error.message ?? ''}` : null);
  const app = mountApp(tool.name, args, Promise.resolve(result));
  outcome.append(el('h2', {}, 'App'), app.node);
  return app;
}

function toolPage(tool, ctx) {
  const outcome = el('div', { class: 'outcome', testid: 'tool-outcome', 'aria-live': 'polite' });
  let form = null;
  let app = null;
  const closeApp = () => {
    if (app) app.close();
    app = null;
  };
  const call = async (args) => {
    closeApp();
    clear(outcome);
    form.button.disabled = true;
    outcome.append(el('p', { class: 'muted', testid: 'tool-pending' }, 'Calling… (a call that needs approval waits in the approvals inbox)'));
    try {
      const res = await api(`/v1/tools/${encodeURIComponent(tool.name)}`, { method: 'POST', body: { arguments: args } });
      clear(outcome);
      const took = el('p', { class: 'muted' }, `took ${ms(res && res.duration_ms)}`);
      if (res && res.error) {
        outcome.append(el('h2', {}, 'The tool failed'), el('p', { class: 'error', role: 'alert', testid: 'tool-error' }, `${res.error.kind ?? 'error'}: ${res.error.message ?? ''}`), took);
      } else {
        outcome.append(el('h2', {}, 'Result'), renderResult(res ? res.result : null), took);
        ctx.announce(`${tool.name} answered`);
      }
      app = await showApp(tool, args, res, outcome);
    } catch (err) {
      clear(outcome);
      if (err instanceof ApiError && err.status === 400 && (err.fields.length || err.param)) {
        const fields = err.fields.length ? err.fields : [{ path: err.param, message: err.message }];
        outcome.append(el('p', { class: 'error', role: 'alert', testid: 'tool-invalid' }, `The arguments do not fit the schema: ${err.message}`));
        form.showErrors(fields);
      } else {
        outcome.append(el('p', { class: 'error', role: 'alert', testid: 'tool-call-failed' }, describe(err)));
      }
    } finally {
      form.button.disabled = false;
    }
  };
  form = schemaForm(tool.schema, call, `Call ${tool.name}`);
  const nodes = [
    el('h1', { testid: 'tool-name' }, String(tool.name)),
    el('p', { testid: 'tool-description' }, String(tool.description ?? '')),
    el('dl', { class: 'kv' }, el('dt', {}, 'Capabilities'), el('dd', {}, caps(tool.capabilities)), tool.file ? [el('dt', {}, 'Defined in'), el('dd', { class: 'mono' }, where(tool))] : null),
    el('section', { 'aria-labelledby': 'h-try' }, el('h2', { id: 'h-try' }, 'Try it'), form.form, outcome),
    el('details', { class: 'schema' }, el('summary', {}, 'JSON Schema'), el('pre', { class: 'json', testid: 'tool-schema' }, pretty(tool.schema))),
  ];
  return { nodes, closeApp };
}
