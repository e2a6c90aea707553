//! The runs the server knows: each run's events as they happened (so a late reader of
//! `/v1/runs/{id}/events` sees them all), its end, and the token that cancels it.

pub(crate) mod approvals;
pub(crate) mod book;
mod size;
pub(crate) mod states;
pub(crate) mod tasks;

use super::error::error_kind;
use crate::walls::auth::Principal;
use futures_util::Stream;
use kiln_agent::Event;
use kiln_agent::RunError;
use kiln_agent::RunErrorKind;
use kiln_agent::RunReport;
use kiln_core::context::call_events::ToolNote;
use serde_json::{Value, json};
use size::json_size;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// Finished runs kept for `GET /v1/runs/{id}` at most (the run log keeps them all).
const KEEP_FINISHED: usize = 1000;

/// The bytes finished runs kept for `GET /v1/runs/{id}` may hold together, as
/// [`RunEntry::size`] estimates them: past it the oldest are forgotten (the run log answers
/// for them). The newest is kept whatever its size.
pub const KEEP_FINISHED_BYTES: usize = 64 << 20;

/// One run started by the server.
pub struct RunEntry {
    /// The run id (as in the run log).
    pub id: String,
    /// The agent.
    pub agent: String,
    /// The token's actor that started it.
    pub owner: Option<String>,
    /// Cancels this run only.
    pub cancel: CancellationToken,
    /// The calls waiting for a person's approval.
    pub approvals: Arc<approvals::Approvals>,
    /// When it started (seconds since the epoch).
    pub started_at: f64,
    /// What a person adds to it while it runs (`POST /v1/runs/{id}/input`).
    pub steering: Arc<kiln_agent::steer::Steering>,
    events: Mutex<Vec<Arc<Event>>>,
    /// How many events there are; readers wait on changes.
    count: watch::Sender<usize>,
    /// Whether the run has ended, and who waits for it ([`RunEntry::wait`]): a request that
    /// wants only the end is not woken by every event before it. (A `Notify` and a flag: a
    /// `watch` channel would keep half a kilobyte a run.)
    ended: AtomicBool,
    end_notify: Notify,
}

impl RunEntry {
    /// A run with no events yet.
    pub fn new(
        id: String,
        agent: String,
        owner: Option<String>,
        cancel: CancellationToken,
        approvals: Arc<approvals::Approvals>,
    ) -> Self {
        RunEntry {
            id,
            agent,
            owner,
            cancel,
            approvals,
            started_at: approvals::now_secs(),
            steering: Arc::default(),
            events: Mutex::new(Vec::new()),
            count: watch::Sender::new(0),
            ended: AtomicBool::new(false),
            end_notify: Notify::new(),
        }
    }

    /// Appends an event and wakes the readers.
    pub fn push(&self, ev: Event) {
        let end = matches!(ev, Event::Finished(_));
        let n = {
            let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            events.push(Arc::new(ev));
            // Under the lock: whoever sees the end among the events sees `end()` too.
            if end {
                self.ended.store(true, Ordering::Release);
            }
            events.len()
        };
        self.count.send_replace(n);
        if end {
            self.end_notify.notify_waiters();
        }
    }

    /// About how many bytes the entry holds: its events as JSON would take (the report's
    /// messages and calls, streamed text, each call's arguments) and a fixed part for each.
    pub fn size(&self) -> usize {
        let events = self
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let approvals: usize = (self.approvals.history().iter())
            .map(|(w, _)| w.question.len() + w.args.as_ref().map_or(0, json_size) + 128)
            .sum();
        ENTRY_BYTES + approvals + events.iter().map(|e| event_size(e)).sum::<usize>()
    }

    /// The events so far.
    #[cfg(test)]
    pub(crate) fn events_so_far(&self) -> Vec<Arc<Event>> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn get(&self, i: usize) -> Option<Arc<Event>> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.get(i).cloned()
    }

    /// The end of the run, once it has ended. Looked for from the last event back: an event a
    /// tool's own thread sends late may come after it, and [`RunEntry::wait`] wakes only once.
    pub fn end(&self) -> Option<Arc<Event>> {
        if !self.ended.load(Ordering::Acquire) {
            return None;
        }
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        (events.iter().rev())
            .find(|e| matches!(***e, Event::Finished(_)))
            .cloned()
    }

    /// Waits for the end of the run.
    pub async fn wait(&self) -> Arc<Event> {
        loop {
            // Made before the end is looked for: a `Notified` hears every `notify_waiters`
            // from its creation, so an end pushed in between is not missed.
            let notified = self.end_notify.notified();
            if let Some(end) = self.end() {
                return end;
            }
            notified.await;
        }
    }

    /// Every event from the first, live, ending after the run's end.
    pub fn events(self: &Arc<Self>) -> impl Stream<Item = Arc<Event>> + Send + use<> {
        let rx = self.count.subscribe();
        futures_util::stream::unfold(
            (self.clone(), 0usize, rx, false),
            |(entry, i, mut rx, done)| async move {
                if done {
                    return None;
                }
                loop {
                    if let Some(ev) = entry.get(i) {
                        let last = matches!(*ev, Event::Finished(_));
                        return Some((ev, (entry, i + 1, rx, last)));
                    }
                    rx.changed().await.ok()?;
                }
            },
        )
    }

    /// The arguments of the call the model named `call_id` in this run, from its
    /// `tool_started` event: the latest one (a provider that sends no ids has them made up per
    /// round, so an id may repeat; the call asking is the one started last).
    pub fn call_args(&self, call_id: &str) -> Option<Value> {
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.iter().rev().find_map(|ev| match &**ev {
            Event::ToolStarted { id, args, .. } if id == call_id => Some(Value::clone(args)),
            _ => None,
        })
    }

    /// The arguments of the call asking an approval: the call the model named `call_id`, else
    /// the last call of `tool` this run started (a direct call has no model id).
    pub fn asking_args(&self, call_id: Option<&str>, tool: Option<&str>) -> Option<Value> {
        if let Some(id) = call_id {
            return self.call_args(id);
        }
        let tool = tool?;
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.iter().rev().find_map(|ev| match &**ev {
            Event::ToolStarted { name, args, .. } if name == tool => Some(Value::clone(args)),
            _ => None,
        })
    }

    /// The approvals this run waits for, as the inbox lists them: the run, the question, the
    /// tool and its arguments, when asked and the deadline.
    pub fn inbox(&self) -> Vec<Value> {
        self.approvals
            .waiting_calls()
            .into_iter()
            .map(|w| {
                let args = w
                    .args
                    .or_else(|| self.asking_args(w.call_id.as_deref(), w.tool.as_deref()));
                json!({
                    "run": self.id, "id": w.id, "capability": w.capability,
                    "question": w.question, "tool": w.tool, "args": args,
                    "asked_at": w.asked_at, "expires_at": w.expires_at,
                })
            })
            .collect()
    }

    /// The status word of [`RunEntry::status`] without building the report.
    pub fn status_word(&self) -> &'static str {
        let Some(end) = self.end() else {
            return match self.approvals.waiting().is_empty() {
                true => "running",
                false => "awaiting_approval",
            };
        };
        match &*end {
            Event::Finished(result) => match &**result {
                Ok(r) if r.error.is_some() => "failed",
                Ok(_) => "completed",
                Err(e) if matches!(e.kind, RunErrorKind::Cancelled) => "cancelled",
                Err(_) => "failed",
            },
            _ => "running",
        }
    }

    /// `{id, agent, status, ...}` with the report and error once it has ended.
    pub fn status(&self) -> Value {
        match self.end().as_deref() {
            Some(Event::Finished(result)) => {
                let mut v = result_json(result);
                v["id"] = json!(self.id);
                v
            }
            _ => match self.approvals.waiting() {
                waiting if waiting.is_empty() => {
                    json!({"id": self.id, "agent": self.agent, "status": "running"})
                }
                waiting => json!({
                    "id": self.id, "agent": self.agent, "status": "awaiting_approval",
                    "approvals": waiting,
                }),
            },
        }
    }
}

/// A tool call as a caller sees it: the failure's `detail` (positions in scripts) stays in
/// the server's log and the run log.
fn public_call(mut call: Value) -> Value {
    if let Some(err) = call["outcome"]["error"].as_object_mut() {
        err.remove("detail");
    }
    call
}

/// A report as a caller sees it (see [`kiln_core::error::public::report`]).
pub fn public_report(report: &RunReport) -> Value {
    kiln_core::error::public::report(serde_json::to_value(report).unwrap_or_default())
}

/// `{status, agent, report, error?}` of a finished run, as its caller may see it: the error's
/// kind and message without script paths, URLs or type paths (the log has them whole).
pub fn result_json(result: &Result<RunReport, RunError>) -> Value {
    match result {
        // A direct call (the console's) that failed: its run ends with the call's error.
        Ok(report) if report.error.is_some() => json!({
            "agent": report.agent,
            "status": "failed",
            "error": {"kind": "tool", "message": kiln_core::error::public::scrub(report.error.as_deref().unwrap_or_default())},
            "report": public_report(report),
        }),
        Ok(report) => {
            json!({"agent": report.agent, "status": "completed", "report": public_report(report)})
        }
        Err(e) => json!({
            "agent": e.report.agent,
            "status": if matches!(e.kind, RunErrorKind::Cancelled) { "cancelled" } else { "failed" },
            "error": {"kind": error_kind(e), "message": kiln_core::error::public::scrub(&e.to_string())},
            "report": public_report(&e.report),
        }),
    }
}

/// An event as an SSE event name and JSON data.
pub fn event_json(ev: &Event) -> (&'static str, Value) {
    match ev {
        Event::Text(t) => ("text", json!({"text": t})),
        Event::ModelRequest { round } => ("model_request", json!({"round": round})),
        Event::ModelReply { round } => ("model_reply", json!({"round": round})),
        Event::ToolStarted {
            round,
            id,
            name,
            args,
        } => (
            "tool_started",
            json!({"round": round, "id": id, "name": name, "args": args}),
        ),
        Event::ToolFinished(record) => (
            "tool_finished",
            public_call(serde_json::to_value(record).unwrap_or_default()),
        ),
        Event::Finished(result) => ("end", result_json(result)),
        Event::ToolNote {
            round,
            id,
            name,
            note,
        } => note_json(*round, id, name, note),
        Event::ApprovalRequested(asked) => (
            "approval_requested",
            json!({"id": asked.id, "capability": asked.capability, "question": asked.question}),
        ),
        Event::Steered { round, text } => ("input", json!({"round": round, "text": text})),
        // An event kind newer than this door: named, without data it cannot describe.
        _ => ("event", Value::Null),
    }
}

/// A tool's progress (`tool_progress`) or emitted event (`tool_event`) as an SSE event name
/// and JSON data: the call it came from, and what it said.
pub fn note_json(round: u32, id: &str, tool: &str, note: &ToolNote) -> (&'static str, Value) {
    match note {
        ToolNote::Progress {
            done,
            total,
            message,
        } => (
            "tool_progress",
            json!({"round": round, "id": id, "name": tool, "done": done, "total": total, "message": message}),
        ),
        ToolNote::Emit { name, value } => (
            "tool_event",
            json!({"round": round, "id": id, "name": tool, "event": name, "value": value}),
        ),
    }
}

/// What an entry holds besides its events and approvals, about.
const ENTRY_BYTES: usize = 1024;

/// What an event holds besides its text and values, about.
const EVENT_BYTES: usize = 64;

/// About how many bytes one event holds (see [`RunEntry::size`]).
fn event_size(ev: &Event) -> usize {
    EVENT_BYTES
        + match ev {
            Event::Text(t) => t.len(),
            Event::ToolStarted { id, name, args, .. } => id.len() + name.len() + json_size(args),
            Event::ToolFinished(record) => json_size(record),
            Event::ToolNote { id, name, note, .. } => id.len() + name.len() + json_size(note),
            Event::ApprovalRequested(asked) => {
                asked.id.len() + asked.capability.len() + asked.question.len()
            }
            Event::Finished(result) => match result.as_ref() {
                Ok(report) => json_size(report),
                Err(e) => json_size(&e.report) + e.to_string().len(),
            },
            _ => 0,
        }
}

/// Runs by id, running and recently finished.
#[derive(Default)]
pub struct RunTable {
    inner: Mutex<Tables>,
}

#[derive(Default)]
struct Tables {
    runs: HashMap<String, Arc<RunEntry>>,
    /// The finished runs in the order they ended, with their estimated sizes.
    finished: VecDeque<(String, usize)>,
    /// The sum of those sizes.
    finished_bytes: usize,
}

impl RunTable {
    /// Registers a run.
    pub fn insert(&self, entry: Arc<RunEntry>) {
        let mut t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        t.runs.insert(entry.id.clone(), entry);
    }

    /// Notes that a run ended, forgetting the oldest finished runs beyond the limits: more
    /// than [`KEEP_FINISHED`] runs, or more than [`KEEP_FINISHED_BYTES`] together.
    pub fn finished(&self, id: &str) {
        let entry = {
            let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            t.runs.get(id).cloned()
        };
        // Measured outside the table's lock: a large run's events take a while to walk.
        let size = entry.map_or(0, |e| e.size());
        let mut forgotten = Vec::new();
        {
            let mut t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            t.finished.push_back((id.to_string(), size));
            t.finished_bytes += size;
            while t.finished.len() > KEEP_FINISHED
                || (t.finished_bytes > KEEP_FINISHED_BYTES && t.finished.len() > 1)
            {
                if let Some((old, size)) = t.finished.pop_front() {
                    t.finished_bytes -= size;
                    forgotten.extend(t.runs.remove(&old));
                }
            }
        }
        // A run's events are freed here, after the table is open to other requests again.
        drop(forgotten);
    }

    /// The runs `who` may see (see [`Principal::sees`]), newest first.
    pub fn visible(&self, who: &Principal) -> Vec<Arc<RunEntry>> {
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut runs: Vec<_> = t
            .runs
            .values()
            .filter(|r| who.sees(r.owner.as_deref()))
            .cloned()
            .collect();
        runs.sort_by(|a, b| b.started_at.total_cmp(&a.started_at));
        runs
    }

    /// The runs waiting for an approval `who` may decide: its own, or every actor's for a
    /// token granted `approve`.
    pub fn awaiting(&self, who: &Principal) -> Vec<Arc<RunEntry>> {
        let decides_all = who.may_decide_all();
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        t.runs
            .values()
            .filter(|r| decides_all || who.sees(r.owner.as_deref()))
            .filter(|r| !r.approvals.waiting().is_empty())
            .cloned()
            .collect()
    }

    /// The run `id`, whoever started it (for what this server hears from the others).
    pub(crate) fn any(&self, id: &str) -> Option<Arc<RunEntry>> {
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        t.runs.get(id).cloned()
    }

    /// The run `id` if `who` may see it (see [`Principal::sees`]: its owner only; a missing
    /// actor is the open server's one caller, never a wildcard).
    pub fn get(&self, id: &str, who: &Principal) -> Option<Arc<RunEntry>> {
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        t.runs
            .get(id)
            .filter(|r| who.sees(r.owner.as_deref()))
            .cloned()
    }
}

/// A run's status as the API names it (`completed`, `failed`), from the run log's word.
pub(crate) fn api_status(logged: &str) -> &str {
    match logged {
        "ok" => "completed",
        "error" => "failed",
        other => other,
    }
}
