// The playground: pick an agent, a session and a prompt; the run starts with wait:false and
// its event stream shows the answer as it comes, tool calls as they start and finish, and
// approvals answerable inline.

import { api, clear, describe, el, eventItem, ms, notesView, pretty, progressBar, stream } from './api.js';
import { decisionControls } from './approvals.js';

let session = 'console';

function turnView(prompt) {
  const answer = el('p', { class: 'answer', testid: 'chat-answer' });
  const tools = el('ul', { class: 'calls', testid: 'chat-tools', 'aria-label': 'tool calls' });
  const approvals = el('div', { testid: 'chat-approvals' });
  const status = el('p', { class: 'meta', testid: 'chat-status', role: 'status' }, 'starting…');
  const node = el(
    'article',
    { class: 'turn', testid: 'chat-turn' },
    el('div', { class: 'you' }, el('h2', { class: 'sr-only' }, 'Your prompt'), el('p', {}, el('strong', {}, 'You: '), prompt)),
    el('div', { class: 'agent' }, el('h2', { class: 'sr-only' }, 'Answer'), tools, approvals, answer),
    status,
  );
  return { node, answer, tools, approvals, status };
}

function toolItem(view, d) {
  // Keyed by round too: a provider that sends no call ids gets them made up per round.
  const id = `${d.round ?? ''}:${d.id ?? ''}`;
  let li = [...view.tools.children].find((c) => c.dataset.callId === id);
  if (!li) {
    li = el('li', { class: 'call', testid: 'chat-tool', 'data-call-id': id, 'data-tool': String(d.name ?? '') });
    view.tools.append(li);
  }
  return li;
}

function onStarted(view, d) {
  const li = toolItem(view, d);
  li.dataset.state = 'running';
  clear(li).append(
    el('div', { class: 'call-head' }, el('strong', {}, String(d.name ?? 'tool')), ' ', el('span', { class: 'badge status-running', testid: 'chat-tool-state' }, 'running')),
    el('details', {}, el('summary', {}, 'arguments'), el('pre', { class: 'json' }, pretty(d.args))),
  );
}

/** A running call's progress or event, shown live under it. */
function onNote(view, d, kind) {
  const li = toolItem(view, d);
  let notes = li.querySelector('.notes');
  if (!notes) {
    notes = el('div', { class: 'notes', testid: 'chat-tool-notes' });
    li.append(notes);
  }
  if (kind === 'progress') {
    const bar = progressBar(d, 'chat-');
    const old = notes.querySelector('.progress');
    if (old) old.replaceWith(bar);
    else notes.prepend(bar);
    return;
  }
  let events = notes.querySelector('ul.events');
  if (!events) {
    events = el('ul', { class: 'events', 'aria-label': 'events the tool sent' });
    notes.append(events);
  }
  events.append(eventItem(d.event, d.value, 'chat-'));
}

function onFinished(view, d) {
  const li = toolItem(view, d);
  const outcome = d.outcome || {};
  const failed = outcome.error && typeof outcome.error === 'object';
  li.dataset.state = failed ? 'failed' : 'done';
  li.classList.toggle('failed', Boolean(failed));
  clear(li).append(
    el('div', { class: 'call-head' }, el('strong', {}, String(d.name ?? 'tool')), ' ', el('span', { class: `badge status-${failed ? 'failed' : 'completed'}`, testid: 'chat-tool-state' }, failed ? 'failed' : 'done'), ' ', el('span', { class: 'muted' }, ms(d.duration_ms ?? outcome.duration_ms))),
    el('details', {}, el('summary', {}, 'arguments'), el('pre', { class: 'json' }, pretty(d.args))),
    failed
      ? el('p', { class: 'error', testid: 'chat-tool-error' }, `${outcome.error.kind ?? 'error'}: ${outcome.error.message ?? ''}`)
      : el('pre', { class: 'json result', testid: 'chat-tool-result' }, pretty(outcome.result)),
  );
  if (Array.isArray(d.notes) && d.notes.length) li.append(notesView(d.notes, 'chat-'));
}

function onApproval(view, run, d, announce) {
  const id = String(d.id ?? '');
  if ([...view.approvals.children].some((c) => c.dataset.approvalId === id)) return;
  const result = el('p', { class: 'meta', testid: 'chat-approval-result' });
  const box = el('div', { class: 'card approval inline', testid: 'chat-approval', 'data-approval-id': id }, el('p', {}, el('strong', {}, `Approval (${d.capability ?? ''}): `), String(d.question ?? '')), result);
  const controls = decisionControls(
    run,
    id,
    (decision, reason) => {
      controls.remove();
      result.textContent = decision === 'approve' ? 'approved' : `denied${reason ? `: ${reason}` : ''}`;
      announce(`Approval ${result.textContent}`);
    },
    'chat-',
  );
  box.dataset.approvalId = id;
  box.insertBefore(controls, result);
  view.approvals.append(box);
  announce(`The run asks: ${d.question ?? d.capability ?? 'approval'}`);
}

function showDecision(box, d) {
  const result = box.querySelector('[data-testid="chat-approval-result"]');
  if (result && !result.textContent && d) result.textContent = d.decision === 'approve' ? 'approved' : `denied${d.reason ? `: ${d.reason}` : ''}`;
}

/** After the run ended: how its approvals that someone else answered were decided. */
async function fillDecisions(view, id) {
  try {
    const t = await api(`/v1/runs/${encodeURIComponent(id)}/timeline`);
    for (const a of Array.isArray(t && t.approvals) ? t.approvals : []) {
      const box = [...view.approvals.children].find((c) => c.dataset.approvalId === String(a.id));
      if (box) showDecision(box, a.decision);
    }
  } catch (_) {
    // The decisions stay unshown; the run's timeline has them.
  }
}

/** The playground. Returns its cleanup. */
export function renderChat(main, ctx) {
  const agent = el('select', { id: 'c-agent', name: 'agent', testid: 'chat-agent', required: true });
  const sessionInput = el('input', { id: 'c-session', name: 'session', type: 'text', value: session, testid: 'chat-session', autocomplete: 'off' });
  const prompt = el('textarea', { id: 'c-prompt', name: 'prompt', rows: '3', testid: 'chat-prompt', required: true });
  const send = el('button', { type: 'submit', testid: 'chat-send' }, 'Send');
  const note = el('p', { class: 'error', role: 'alert', testid: 'chat-error' });
  const transcript = el('div', { class: 'transcript', testid: 'chat-transcript' });
  const form = el(
    'form',
    { class: 'chat-form', testid: 'chat-form' },
    el('div', { class: 'field' }, el('label', { for: 'c-agent' }, 'Agent'), agent),
    el('div', { class: 'field' }, el('label', { for: 'c-session' }, 'Session'), sessionInput),
    el('div', { class: 'field wide' }, el('label', { for: 'c-prompt' }, 'Prompt'), prompt),
    el('div', { class: 'actions' }, send),
    note,
  );
  main.append(el('h1', {}, 'Playground'), form, el('section', { 'aria-label': 'Conversation' }, transcript));
  let alive = true;
  const streams = new Set();
  const views = new Map();
  api('/v1/models')
    .then((data) => {
      if (!alive) return;
      const models = Array.isArray(data && data.data) ? data.data : [];
      for (const m of models) agent.append(el('option', { value: String(m.id) }, m.description ? `${m.id} — ${m.description}` : String(m.id)));
      if (!models.length) note.textContent = 'No agents are loaded.';
    })
    .catch((err) => {
      if (alive) note.textContent = `Could not list agents: ${describe(err)}`;
    });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = prompt.value.trim();
    if (!text || !agent.value) return;
    session = sessionInput.value.trim();
    note.textContent = '';
    send.disabled = true;
    const view = turnView(text);
    transcript.append(view.node);
    const body = { agent: agent.value, input: text, wait: false, stream: true };
    if (session) body.session = session;
    try {
      const run = await api('/v1/runs', { method: 'POST', body });
      if (!alive) return;
      prompt.value = '';
      follow(view, run.id);
    } catch (err) {
      view.status.textContent = `not started: ${describe(err)}`;
      note.textContent = describe(err);
    } finally {
      send.disabled = false;
    }
  });
  const follow = (view, id) => {
    view.node.dataset.runId = id;
    views.set(id, view);
    view.status.textContent = 'running…';
    view.status.append(' ', el('a', { href: `#/runs/${encodeURIComponent(id)}`, testid: 'chat-run-link' }, `timeline of ${id}`));
    const s = stream(`/v1/runs/${encodeURIComponent(id)}/events`, {
      // The stream replays the run from its start: a reconnection starts the view afresh.
      onOpen: () => {
        view.answer.textContent = '';
        clear(view.tools);
      },
      onEvent: (ev) => handle(view, id, ev),
      onError: (err) => {
        view.status.dataset.note = describe(err);
      },
      done: (ev) => ev.event === 'end',
    });
    streams.add(s);
    view.steer = steerForm(id);
    view.node.append(view.steer);
  };
  // While a run runs, a person may add to it: the message reaches its next model request.
  const steerForm = (id) => {
    const field = `steer-${id}`;
    const input = el('input', { id: field, type: 'text', testid: 'chat-steer-text', autocomplete: 'off' });
    const said = el('span', { class: 'muted', role: 'status', testid: 'chat-steer-note' });
    const box = el('form', { class: 'steer', testid: 'chat-steer' }, el('label', { for: field }, 'Add to this run'), ' ', input, ' ', el('button', { type: 'submit', class: 'secondary' }, 'Add'), ' ', said);
    box.addEventListener('submit', async (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      try {
        await api(`/v1/runs/${encodeURIComponent(id)}/input`, { method: 'POST', body: { text } });
        input.value = '';
        said.textContent = 'added: the run reads it before it next asks the model';
      } catch (err) {
        said.textContent = describe(err);
      }
    });
    return box;
  };
  const handle = (view, id, ev) => {
    const d = ev.data && typeof ev.data === 'object' ? ev.data : {};
    if (ev.event === 'text') view.answer.append(String(d.text ?? ''));
    else if (ev.event === 'tool_started') onStarted(view, d);
    else if (ev.event === 'tool_finished') onFinished(view, d);
    else if (ev.event === 'tool_progress') onNote(view, d, 'progress');
    else if (ev.event === 'tool_event') onNote(view, d, 'event');
    else if (ev.event === 'approval_requested') onApproval(view, id, d, ctx.announce);
    else if (ev.event === 'input') view.tools.append(el('li', { class: 'steered', testid: 'chat-steered' }, `you added: ${String(d.text ?? '')}`));
    else if (ev.event === 'model_request') view.status.firstChild.textContent = `round ${d.round ?? ''}: asking the model…`;
    else if (ev.event === 'end') {
      const report = d.report || {};
      if (!view.answer.textContent && report.answer) view.answer.textContent = String(report.answer);
      view.node.dataset.status = String(d.status ?? '');
      view.status.firstChild.textContent = `${d.status ?? 'ended'}${d.error ? `: ${typeof d.error === 'string' ? d.error : d.error.message ?? pretty(d.error)}` : ''}`;
      for (const box of view.approvals.querySelectorAll('.decide')) box.remove();
      if (view.steer) view.steer.remove();
      if ([...view.approvals.children].some((b) => !b.querySelector('[data-testid="chat-approval-result"]').textContent)) fillDecisions(view, id);
      ctx.announce(`Run ${d.status ?? 'ended'}`);
    }
  };
  const off = ctx.subscribe((ev) => {
    if (ev.event !== 'approval_decided' || !ev.data) return;
    const view = views.get(ev.data.run);
    if (!view) return;
    const box = [...view.approvals.children].find((c) => c.dataset.approvalId === String(ev.data.id));
    if (!box) return;
    const decide = box.querySelector('.decide');
    if (decide) decide.remove();
    showDecision(box, ev.data.decision || {});
  });
  agent.focus();
  return () => {
    alive = false;
    off();
    for (const s of streams) s.close();
  };
}
