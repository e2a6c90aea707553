// A form generated from a tool's JSON Schema (strings, numbers, integers, booleans, enums as
// selects, arrays with rows to add and remove, nested objects as fieldsets, defaults,
// required), the errors kiln reports at JSON pointers shown at their field, and a tool's
// result rendered (text, JSON, images and other content blocks).

import { clear, el, pretty } from './api.js';

let uid = 0;
const nextId = (p) => `${p}-${++uid}`;

/** JSON pointer segments of "/a/0/b" ("/" and "" are the whole value). */
export function pointer(path) {
  if (typeof path !== 'string' || path === '' || path === '/') return [];
  return path
    .replace(/^\//, '')
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function encode(seg) {
  return String(seg).replace(/~/g, '~0').replace(/\//g, '~1');
}

function typeOf(schema) {
  if (!schema || typeof schema !== 'object') return 'any';
  if (Array.isArray(schema.enum)) return 'enum';
  let t = schema.type;
  if (Array.isArray(t)) t = t.find((x) => x !== 'null') ?? 'any';
  if (!t && schema.properties) return 'object';
  if (!t && schema.items) return 'array';
  return ['string', 'number', 'integer', 'boolean', 'array', 'object'].includes(t) ? t : 'any';
}

/**
 * One field's common parts: an error node and the bookkeeping to show an error on `control`.
 * Every field object has el, get(), setPath(path), errAt(segments, message), clear().
 */
function errorParts(control, describedBy) {
  const error = el('p', { id: nextId('err'), class: 'field-error', testid: 'field-error', hidden: true });
  return {
    error,
    show(message) {
      error.hidden = false;
      error.textContent = message;
      if (control) {
        control.setAttribute('aria-invalid', 'true');
        control.setAttribute('aria-describedby', [describedBy, error.id].filter(Boolean).join(' '));
      }
    },
    reset() {
      error.hidden = true;
      error.textContent = '';
      if (control) {
        control.removeAttribute('aria-invalid');
        if (describedBy) control.setAttribute('aria-describedby', describedBy);
        else control.removeAttribute('aria-describedby');
      }
    },
  };
}

function labelText(name, schema, required) {
  const title = schema && typeof schema.title === 'string' ? schema.title : name;
  return [String(title), required ? el('span', { class: 'req' }, ' (required)') : null];
}

function help(schema) {
  if (!schema || typeof schema.description !== 'string' || !schema.description) return null;
  return el('p', { id: nextId('help'), class: 'help' }, schema.description);
}

/** A scalar input: string, number, integer, boolean, enum or free JSON. */
function scalarField(schema, name, required, path) {
  const kind = typeOf(schema);
  const id = nextId('f');
  const hint = help(schema);
  const hasDefault = schema && Object.prototype.hasOwnProperty.call(schema, 'default');
  let control;
  let touched = false;
  if (kind === 'enum') {
    control = el('select', { id });
    if (!required || !hasDefault) control.append(el('option', { value: '' }, required ? 'choose…' : '(none)'));
    schema.enum.forEach((v, i) => control.append(el('option', { value: String(i) }, typeof v === 'string' ? v : JSON.stringify(v))));
    if (hasDefault) {
      const i = schema.enum.findIndex((v) => JSON.stringify(v) === JSON.stringify(schema.default));
      if (i >= 0) control.value = String(i);
    }
  } else if (kind === 'boolean') {
    control = el('input', { id, type: 'checkbox', checked: hasDefault && schema.default === true });
    control.addEventListener('change', () => {
      touched = true;
    });
  } else if (kind === 'number' || kind === 'integer') {
    control = el('input', { id, type: 'number', step: kind === 'integer' ? '1' : 'any', inputmode: kind === 'integer' ? 'numeric' : 'decimal' });
    if (hasDefault) control.value = String(schema.default);
  } else if (kind === 'string') {
    const long = schema && (schema.format === 'textarea' || (schema.maxLength ?? 0) > 200);
    control = long ? el('textarea', { id, rows: '3' }) : el('input', { id, type: 'text', autocomplete: 'off' });
    if (hasDefault) control.value = String(schema.default);
  } else {
    control = el('textarea', { id, rows: '3', class: 'mono', placeholder: 'JSON' });
    if (hasDefault) control.value = JSON.stringify(schema.default);
  }
  if (required) control.setAttribute('aria-required', 'true');
  if (hint) control.setAttribute('aria-describedby', hint.id);
  const err = errorParts(control, hint ? hint.id : null);
  const label = el('label', { for: id }, labelText(name, schema, required));
  const wrap = el('div', { class: kind === 'boolean' ? 'field check' : 'field', testid: 'field' }, kind === 'boolean' ? [control, label] : [label, control], hint, err.error);
  const field = {
    el: wrap,
    get() {
      if (kind === 'enum') return control.value === '' ? undefined : schema.enum[Number(control.value)];
      if (kind === 'boolean') return required || hasDefault || touched ? control.checked : undefined;
      const raw = control.value;
      if (raw === '') return undefined;
      if (kind === 'number' || kind === 'integer') {
        const n = Number(raw);
        return Number.isFinite(n) ? n : raw;
      }
      if (kind === 'string') return raw;
      try {
        return JSON.parse(raw);
      } catch (_) {
        return raw;
      }
    },
    setPath(p) {
      control.name = p;
      control.dataset.path = p;
      control.dataset.testid = `input-${p}`;
      err.error.dataset.path = p;
    },
    errAt(segs, message) {
      if (segs.length) return false;
      err.show(message);
      return true;
    },
    clear: err.reset,
    focus: () => control.focus(),
  };
  field.setPath(path);
  return field;
}

function objectField(schema, name, required, path, root) {
  const props = schema && typeof schema.properties === 'object' && schema.properties ? schema.properties : {};
  const req = new Set(Array.isArray(schema && schema.required) ? schema.required : []);
  const children = new Map();
  const hint = help(schema);
  const legendId = nextId('legend');
  const box = root
    ? el('div', { class: 'object root' })
    : el('fieldset', { class: 'object', testid: 'fieldset', 'aria-describedby': hint ? hint.id : null }, el('legend', { id: legendId }, labelText(name, schema, required)));
  const err = errorParts(root ? null : box, hint ? hint.id : null);
  if (hint) box.append(hint);
  box.append(err.error);
  for (const [key, sub] of Object.entries(props)) {
    const child = build(sub, key, req.has(key), `${path === '/' ? '' : path}/${encode(key)}`);
    children.set(key, child);
    box.append(child.el);
  }
  if (!children.size && !root) {
    // An object without declared properties: free JSON.
    const free = scalarField({ ...schema, type: undefined }, name, required, path);
    return free;
  }
  const field = {
    el: box,
    get() {
      const out = {};
      for (const [k, c] of children) {
        const v = c.get();
        if (v !== undefined) out[k] = v;
      }
      if (!root && !required && Object.keys(out).length === 0) return undefined;
      return out;
    },
    setPath(p) {
      box.dataset.path = p;
      err.error.dataset.path = p;
      for (const [k, c] of children) c.setPath(`${p === '/' ? '' : p}/${encode(k)}`);
    },
    errAt(segs, message) {
      if (segs.length) {
        const c = children.get(segs[0]);
        if (c && c.errAt(segs.slice(1), message)) return true;
        if (c && segs.length > 1) return false;
      }
      err.show(segs.length ? `${segs[0]}: ${message}` : message);
      return true;
    },
    clear() {
      err.reset();
      for (const c of children.values()) c.clear();
    },
  };
  field.setPath(path);
  return field;
}

function arrayField(schema, name, required, path) {
  const itemSchema = schema && typeof schema.items === 'object' ? schema.items : {};
  const rows = [];
  const hint = help(schema);
  const list = el('ol', { class: 'rows' });
  const legend = el('legend', {}, labelText(name, schema, required));
  const box = el('fieldset', { class: 'array', testid: 'array', 'aria-describedby': hint ? hint.id : null }, legend);
  const err = errorParts(box, hint ? hint.id : null);
  let current = path;
  const add = el('button', { type: 'button', class: 'secondary', testid: 'add-row' }, `Add to ${name}`);
  const renumber = () => {
    rows.forEach((r, i) => {
      r.field.setPath(`${current}/${i}`);
      r.remove.setAttribute('aria-label', `Remove ${name} item ${i + 1}`);
      r.li.dataset.index = String(i);
    });
  };
  const addRow = (value) => {
    const field = build(itemSchema, `item`, true, `${current}/${rows.length}`, value);
    const remove = el('button', { type: 'button', class: 'secondary small', testid: 'remove-row' }, 'Remove');
    const li = el('li', { class: 'row', testid: 'row' }, field.el, remove);
    const row = { field, remove, li };
    remove.addEventListener('click', () => {
      rows.splice(rows.indexOf(row), 1);
      li.remove();
      renumber();
      add.focus();
    });
    rows.push(row);
    list.append(li);
    renumber();
    return row;
  };
  add.addEventListener('click', () => {
    const row = addRow();
    if (row.field.focus) row.field.focus();
    else {
      const first = row.li.querySelector('input,select,textarea');
      if (first) first.focus();
    }
  });
  if (hint) box.append(hint);
  box.append(err.error, list, add);
  const initial = schema && Array.isArray(schema.default) ? schema.default : [];
  for (const v of initial) addRow(v);
  if (!initial.length && required && (schema.minItems ?? 0) > 0) addRow();
  const field = {
    el: box,
    get() {
      if (!rows.length && !required) return undefined;
      return rows.map((r) => {
        const v = r.field.get();
        return v === undefined ? null : v;
      });
    },
    setPath(p) {
      current = p;
      box.dataset.path = p;
      err.error.dataset.path = p;
      renumber();
    },
    errAt(segs, message) {
      if (segs.length) {
        const r = rows[Number(segs[0])];
        if (r && r.field.errAt(segs.slice(1), message)) return true;
      }
      err.show(segs.length ? `item ${segs.join('/')}: ${message}` : message);
      return true;
    },
    clear() {
      err.reset();
      for (const r of rows) r.field.clear();
    },
  };
  field.setPath(path);
  return field;
}

function build(schema, name, required, path, value) {
  const kind = typeOf(schema);
  let s = schema;
  if (value !== undefined && value !== null && kind !== 'object' && kind !== 'array') s = { ...schema, default: value };
  if (kind === 'object') return objectField(s, name, required, path, false);
  if (kind === 'array') return arrayField(s, name, required, path);
  return scalarField(s, name, required, path);
}

/**
 * A form for `schema`. `onSubmit(args)` is called with the arguments object.
 * Returns {form, showErrors(fields, fallbackMessage), clearErrors()}.
 */
export function schemaForm(schema, onSubmit, submitLabel = 'Call') {
  const root = objectField(schema && typeof schema === 'object' ? schema : {}, 'arguments', true, '/', true);
  const button = el('button', { type: 'submit', testid: 'form-submit' }, submitLabel);
  const form = el('form', { class: 'schema-form', novalidate: true, testid: 'tool-form' }, root.el, el('div', { class: 'actions' }, button));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    root.clear();
    onSubmit(root.get());
  });
  return {
    form,
    button,
    clearErrors: () => root.clear(),
    /** Shows each {path, message} at its field; returns the first invalid control. */
    showErrors(fields) {
      for (const f of fields) {
        const segs = pointer(f && f.path);
        root.errAt(segs, String((f && f.message) ?? 'invalid'));
      }
      const first = form.querySelector('[aria-invalid="true"]');
      if (first && typeof first.focus === 'function') first.focus();
      return first;
    },
  };
}

function isBlock(b) {
  return b && typeof b === 'object' && typeof b.type === 'string';
}

const MIME = /^[a-z]+\/[a-z0-9.+-]+$/i;
const BASE64 = /^[A-Za-z0-9+/=\s]*$/;

function renderBlock(b) {
  if (b.type === 'text') return el('pre', { class: 'text', testid: 'result-text' }, String(b.text ?? ''));
  const mime = b.mimeType ?? b.mime_type;
  if (b.type === 'image' && typeof b.data === 'string' && MIME.test(String(mime)) && String(mime).startsWith('image/') && BASE64.test(b.data)) {
    return el('img', { src: `data:${mime};base64,${b.data.replace(/\s/g, '')}`, alt: `image result (${mime})`, testid: 'result-image', class: 'result-image' });
  }
  if (b.type === 'resource' && b.resource && typeof b.resource.text === 'string') {
    return el('figure', {}, el('figcaption', {}, String(b.resource.uri ?? 'resource')), el('pre', { class: 'text' }, b.resource.text));
  }
  return el('pre', { class: 'json', testid: 'result-json' }, pretty(b));
}

/** A tool's result: text, JSON pretty-printed, or content blocks (images as <img>). */
export function renderResult(result) {
  const box = el('div', { class: 'result', testid: 'result' });
  let blocks = null;
  if (Array.isArray(result) && result.length && result.every(isBlock)) blocks = result;
  else if (result && typeof result === 'object' && Array.isArray(result.content) && result.content.every(isBlock)) blocks = result.content;
  if (blocks) {
    for (const b of blocks) box.append(renderBlock(b));
    if (result && !Array.isArray(result) && result.structuredContent !== undefined) {
      box.append(el('pre', { class: 'json', testid: 'result-json' }, pretty(result.structuredContent)));
    }
  } else if (typeof result === 'string') {
    box.append(el('pre', { class: 'text', testid: 'result-text' }, result));
  } else {
    box.append(el('pre', { class: 'json', testid: 'result-json' }, pretty(result)));
  }
  return box;
}

export { clear };
