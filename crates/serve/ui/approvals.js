// The approvals inbox: every approval the signed-in actor may decide, live from the feed, with
// how long it has waited and its deadline; approve, or deny with a reason. Also the
// approve/deny controls the playground shows inline.

import { api, ApiError, clear, describe, el, pretty, seconds, when } from './api.js';

let uid = 0;

/** Sends a decision; resolves to the run's status answer, throws ApiError (409, 404...). */
export function decide(run, id, decision, reason) {
  const body = decision === 'deny' && reason ? { decision, reason } : { decision };
  return api(`/v1/runs/${encodeURIComponent(run)}/approvals/${encodeURIComponent(id)}`, { method: 'POST', body });
}

function errorText(err) {
  if (err instanceof ApiError && err.status === 409) {
    const d = err.error && err.error.decision;
    const how = d ? (d.decision === 'approve' ? '(it was approved)' : `(it was denied${d.reason ? `: ${d.reason}` : ''})`) : '';
    return `Already decided: ${err.message}${how ? ` ${how}` : ''}`;
  }
  return describe(err);
}

/**
 * Approve / Deny(reason) controls for one approval. `onDecided(decision, reason)` runs after
 * kiln took the decision. `prefix` keeps test ids apart (inbox vs playground).
 */
export function decisionControls(run, id, onDecided, prefix = '') {
  const n = ++uid;
  const reason = el('input', { id: `reason-${n}`, type: 'text', name: 'reason', testid: `${prefix}deny-reason`, autocomplete: 'off' });
  const message = el('p', { id: `msg-${n}`, class: 'error', role: 'alert', testid: `${prefix}approval-error` });
  const approve = el('button', { type: 'button', class: 'approve', testid: `${prefix}approve-button` }, 'Approve');
  const deny = el('button', { type: 'button', class: 'deny', testid: `${prefix}deny-button` }, 'Deny');
  const busy = (on) => {
    approve.disabled = on;
    deny.disabled = on;
  };
  const send = async (decision) => {
    busy(true);
    message.textContent = '';
    const why = reason.value.trim();
    try {
      await decide(run, id, decision, why);
      onDecided(decision, why);
    } catch (err) {
      message.textContent = errorText(err);
      busy(err instanceof ApiError && err.status === 409);
    }
  };
  approve.addEventListener('click', () => send('approve'));
  deny.addEventListener('click', () => send('deny'));
  reason.setAttribute('aria-describedby', `msg-${n}`);
  return el(
    'div',
    { class: 'decide' },
    approve,
    el('div', { class: 'deny-group' }, el('label', { for: `reason-${n}` }, 'Reason for a denial'), reason, deny),
    message,
  );
}

function waited(a, now) {
  return `waited ${seconds(now - Number(a.asked_at || now))}`;
}

function deadline(a, now) {
  if (a.expires_at === null || a.expires_at === undefined) return 'no deadline';
  const left = Number(a.expires_at) - now;
  return left > 0 ? `deadline in ${seconds(left)} (${when(a.expires_at)})` : 'deadline passed';
}

function card(a, onGone, announce) {
  const title = `approval-${++uid}`;
  const timeWaited = el('span', { testid: 'approval-waited' });
  const timeLeft = el('span', { testid: 'approval-deadline' });
  const tick = () => {
    const now = Date.now() / 1000;
    timeWaited.textContent = waited(a, now);
    timeLeft.textContent = deadline(a, now);
  };
  tick();
  const li = el(
    'li',
    { class: 'card approval', testid: 'approval', 'data-approval-id': a.id, 'data-run': a.run, 'aria-labelledby': title },
    el('h2', { id: title, class: 'question', testid: 'approval-question' }, String(a.question ?? a.capability ?? 'approval')),
    el(
      'dl',
      { class: 'kv' },
      el('dt', {}, 'Capability'),
      el('dd', { testid: 'approval-capability' }, String(a.capability ?? '–')),
      el('dt', {}, 'Tool'),
      el('dd', { testid: 'approval-tool' }, String(a.tool ?? '–')),
      el('dt', {}, 'Run'),
      el('dd', {}, el('code', {}, String(a.run ?? ''))),
      el('dt', {}, 'Asked'),
      el('dd', {}, when(a.asked_at), ' · ', timeWaited, ' · ', timeLeft),
    ),
    a.args !== null && a.args !== undefined ? el('details', { open: true }, el('summary', {}, 'Arguments'), el('pre', { class: 'json', testid: 'approval-args' }, pretty(a.args))) : null,
  );
  li.append(
    decisionControls(a.run, a.id, (decision, reason) => {
      announce(decision === 'approve' ? `Approved: ${a.question ?? a.id}` : `Denied: ${a.question ?? a.id}${reason ? ` (${reason})` : ''}`);
      onGone(a, decision);
    }),
  );
  li.tick = tick;
  return li;
}

/** The inbox. Returns its cleanup. */
export function renderApprovals(main, ctx) {
  const note = el('p', { class: 'muted', role: 'status', testid: 'approvals-note' });
  const list = el('ul', { class: 'cards', testid: 'approvals-list' });
  const done = el('p', { class: 'muted', testid: 'approvals-done' });
  main.append(el('h1', {}, 'Approvals'), el('p', {}, 'Calls waiting for a person: approve them, or deny with a reason the model reads.'), note, list, done);
  let alive = true;
  const cards = new Map();
  const gone = (a, decision) => {
    const c = cards.get(a.id + '\u0000' + a.run);
    if (c) {
      // Keep focus in the list: on the next card's first button, else on the note.
      const next = c.nextElementSibling || c.previousElementSibling;
      c.remove();
      cards.delete(a.id + '\u0000' + a.run);
      const target = next ? next.querySelector('button') : note;
      if (target) target.focus({ preventScroll: true });
    }
    done.textContent = `${decision === 'approve' ? 'Approved' : 'Denied'} ${a.id} of ${a.run}.`;
    count();
  };
  const count = () => {
    note.textContent = cards.size ? `${cards.size} waiting` : 'Nothing is waiting for you.';
  };
  if (!ctx.me.approver && !ctx.me.open) {
    note.textContent = "This token decides its own runs' approvals (the approve capability would let it decide every actor's).";
  }
  const load = async () => {
    try {
      const data = await api('/v1/approvals');
      if (!alive) return;
      const items = Array.isArray(data && data.approvals) ? data.approvals : [];
      const seen = new Set();
      for (const a of items) {
        const key = a.id + '\u0000' + a.run;
        seen.add(key);
        if (!cards.has(key)) {
          const c = card(a, gone, ctx.announce);
          cards.set(key, c);
          list.append(c);
        }
      }
      for (const [key, c] of cards) {
        if (!seen.has(key)) {
          c.remove();
          cards.delete(key);
        }
      }
      count();
      if (data && typeof data.durable_error === 'string') {
        note.textContent += ` (durable runs could not be listed: ${data.durable_error})`;
      }
    } catch (err) {
      if (!alive) return;
      note.textContent = `Could not list approvals: ${describe(err)}`;
    }
  };
  const clock = setInterval(() => {
    for (const c of cards.values()) c.tick();
  }, 1000);
  const off = ctx.subscribe((ev) => {
    if (['approval_requested', 'approval_decided', 'run_ended', 'lagged'].includes(ev.event)) load();
  });
  // Durable runs wait in Restate, whose approvals the feed does not carry: ask again now and then.
  const poll = ctx.me && ctx.me.durable ? setInterval(load, 10000) : null;
  load();
  return () => {
    alive = false;
    clearInterval(clock);
    if (poll) clearInterval(poll);
    off();
    clear(list);
  };
}
