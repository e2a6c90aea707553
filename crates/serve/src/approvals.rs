//! Approvals that wait for a person over HTTP: a run's call that needs approval (an `ask`
//! grant, a policy's `ask`) pauses the run. The run shows `status: "awaiting_approval"` with
//! its pending approvals, its event stream carries an `approval_requested` event, and
//! `POST /v1/runs/{id}/approvals/{approval}` with `{"decision": "approve"}` or
//! `{"decision": "deny", "reason": "..."}` resumes it. Nobody deciding within the deadline
//! denies. The call's thread waits; the run holds its slot meanwhile.

use super::error::ApiError;
use kiln_agent::Event;
use kiln_core::context::Asker;
use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// What a person decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Go ahead.
    Approve,
    /// Refuse, for this reason.
    Deny(String),
}

struct Pending {
    id: String,
    capability: String,
    question: String,
    answer: std::sync::mpsc::SyncSender<Decision>,
}

/// The approvals of one run.
pub struct Approvals {
    pending: Mutex<Vec<Pending>>,
    next: AtomicU32,
    timeout: Duration,
    /// Where `approval_requested` events go (the run's event list, once it has one), and
    /// those asked before it had one.
    events: Mutex<Events>,
}

#[derive(Default)]
struct Events {
    sink: Option<Box<dyn Fn(Event) + Send + Sync>>,
    early: Vec<Event>,
}

impl Approvals {
    /// Approvals waiting at most `timeout` for a decision.
    pub fn new(timeout: Duration) -> Self {
        Approvals {
            pending: Mutex::new(Vec::new()),
            next: AtomicU32::new(0),
            timeout,
            events: Mutex::new(Events::default()),
        }
    }

    /// Where the `approval_requested` events go (the run, once it has an entry).
    pub fn attach(&self, sink: impl Fn(Event) + Send + Sync + 'static) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        // A run may ask before its entry exists: those events go first.
        for ev in std::mem::take(&mut events.early) {
            sink(ev);
        }
        events.sink = Some(Box::new(sink));
    }

    /// The approvals waiting, as the run's status shows them.
    pub fn waiting(&self) -> Vec<Value> {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending
            .iter()
            .map(|p| json!({"id": p.id, "capability": p.capability, "question": p.question}))
            .collect()
    }

    /// Answers approval `id`.
    pub fn decide(&self, id: &str, decision: Decision) -> Result<(), ApiError> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = pending.iter().position(|p| p.id == id) else {
            return Err(ApiError::not_found(
                "approval_not_found",
                format!(
                    "no approval \"{id}\" is waiting in this run (it was decided, timed out, or never asked)"
                ),
            ));
        };
        let p = pending.remove(i);
        let _ = p.answer.try_send(decision);
        Ok(())
    }
}

impl Asker for Approvals {
    fn ask(&self, cap: &str, question: &str) -> Result<bool, String> {
        let id = format!("approval_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (answer, decided) = std::sync::mpsc::sync_channel(1);
        {
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.push(Pending {
                id: id.clone(),
                capability: cap.to_string(),
                question: question.to_string(),
                answer,
            });
        }
        {
            let ev = Event::ApprovalRequested {
                id: id.clone(),
                capability: cap.to_string(),
                question: question.to_string(),
            };
            let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            match &events.sink {
                Some(sink) => sink(ev),
                None => events.early.push(ev),
            }
        }
        let decided = decided.recv_timeout(self.timeout);
        // Whatever happened, it is no longer waiting.
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| p.id != id);
        match decided {
            Ok(Decision::Approve) => Ok(true),
            Ok(Decision::Deny(reason)) if reason.is_empty() => Ok(false),
            Ok(Decision::Deny(reason)) => Err(format!("it was denied: {reason}")),
            Err(_) => Err(format!(
                "nobody approved it within {} s",
                self.timeout.as_secs_f64()
            )),
        }
    }
}

/// The decision a `POST .../approvals/{id}` body gives.
pub fn decision(body: &Value) -> Result<Decision, ApiError> {
    match body["decision"].as_str() {
        Some("approve") => Ok(Decision::Approve),
        Some("deny") => Ok(Decision::Deny(
            body["reason"].as_str().unwrap_or_default().to_string(),
        )),
        _ => Err(ApiError::bad_request(
            "decision",
            "decision must be \"approve\" or \"deny\" (with an optional reason)",
        )),
    }
}
