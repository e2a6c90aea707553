//! Approvals that wait for a person over HTTP: a run's call that needs approval (an `ask`
//! grant, a policy's `ask`) pauses the run. The run shows `status: "awaiting_approval"` with
//! its pending approvals, its event stream carries an `approval_requested` event, and
//! `POST /v1/runs/{id}/approvals/{approval}` with `{"decision": "approve"}` or
//! `{"decision": "deny", "reason": "..."}` resumes it. Nobody deciding within the deadline
//! denies. The call's thread waits; the run holds its slot meanwhile.

use crate::error::ApiError;
use kiln_agent::{ApprovalAsked, Event};
use kiln_core::context::{ApprovalAsk, Approver};
use kiln_db::approvals::Claim;
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

/// An approval waiting, and where its decision goes.
struct Pending {
    ask: Asked,
    answer: std::sync::mpsc::SyncSender<Decision>,
}

/// A waiting approval as the console's inbox shows it (and the shared database keeps it).
pub use kiln_db::approvals::Asked;

/// Seconds since the epoch, now.
pub fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The approvals of one run.
pub struct Approvals {
    pending: Mutex<Vec<Pending>>,
    /// The approvals that ended, with the decision that took effect (as the durable door
    /// shows it: `{"decision": "approve"}` or `{"decision": "deny", "reason": ...}`).
    closed: Mutex<Vec<(String, Value)>>,
    /// Every approval asked, in order, waiting or not.
    asked: Mutex<Vec<Asked>>,
    next: AtomicU32,
    timeout: Duration,
    /// Where `approval_requested` events go (the run's event list, once it has one), and
    /// those asked before it had one.
    events: Mutex<Events>,
    /// The database the servers share, once the run has an id (PostgreSQL only): approvals
    /// are recorded there and decisions claimed there.
    book: std::sync::OnceLock<crate::table::book::Book>,
}

/// How often a waiting approval reads its decision from the shared database, besides hearing
/// of it at once: a notice sent while this server's listening connection was down is lost.
const READ_SHARED_EVERY: Duration = Duration::from_secs(2);

/// Told of each approval that ended: its id and the decision that took effect.
type ClosedListener = Box<dyn Fn(&str, &Value) + Send + Sync>;

#[derive(Default)]
struct Events {
    sink: Option<Box<dyn Fn(Event) + Send + Sync>>,
    early: Vec<Event>,
    /// Told of each approval that ended: its id and the decision that took effect.
    closed: Option<ClosedListener>,
}

impl Approvals {
    /// Approvals waiting at most `timeout` for a decision.
    pub fn new(timeout: Duration) -> Self {
        Approvals {
            pending: Mutex::new(Vec::new()),
            closed: Mutex::new(Vec::new()),
            asked: Mutex::new(Vec::new()),
            next: AtomicU32::new(0),
            timeout,
            events: Mutex::new(Events::default()),
            book: std::sync::OnceLock::new(),
        }
    }

    /// Shares these approvals through `book` from now on: those waiting already are recorded
    /// there, and every later one as it is asked.
    pub fn share(&self, book: crate::table::book::Book) {
        let _ = self.book.set(book);
        if let Some(book) = self.book.get() {
            // Under the list's lock: an approval asked meanwhile is recorded here or by
            // `approve_call`, which sees the book once this lock is let go.
            let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            for p in pending.iter() {
                book.record(&p.ask);
            }
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

    /// Told of each approval that ends (decided, or denied by the deadline).
    pub fn on_closed(&self, f: impl Fn(&str, &Value) + Send + Sync + 'static) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.closed = Some(Box::new(f));
    }

    /// The approvals waiting, with the call asking and their times.
    pub fn waiting_calls(&self) -> Vec<Asked> {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.iter().map(|p| p.ask.clone()).collect()
    }

    /// Every approval asked, in order, with the decision that took effect (`None`: waiting).
    pub fn history(&self) -> Vec<(Asked, Option<Value>)> {
        let closed = self.closed();
        let asked = self.asked.lock().unwrap_or_else(|e| e.into_inner());
        asked
            .iter()
            .map(|a| {
                let won = closed
                    .iter()
                    .find(|(id, _)| *id == a.id)
                    .map(|(_, w)| w.clone());
                (a.clone(), won)
            })
            .collect()
    }

    /// The approvals that ended, with the decision that took effect.
    pub fn closed(&self) -> Vec<(String, Value)> {
        self.closed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The approvals waiting, as the run's status shows them.
    pub fn waiting(&self) -> Vec<Value> {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending
            .iter()
            .map(|p| json!({"id": p.ask.id, "capability": p.ask.capability, "question": p.ask.question}))
            .collect()
    }

    /// Answers approval `id`. One that already ended is a 409 with the decision that took
    /// effect, as under `--restate`; with a shared database, also one decided through another
    /// server first.
    pub fn decide(&self, id: &str, decision: Decision) -> Result<(), ApiError> {
        if let Some(book) = self.book.get() {
            match book.claim(id, &decision_json(&decision)) {
                // It took effect: the waiting call gets it (unless its deadline, claiming in
                // vain meanwhile, already handed it over).
                Ok(Claim::Won) => {
                    self.deliver(id, decision);
                    return Ok(());
                }
                // Not recorded (the database refused the ask): this server alone decides.
                Ok(Claim::Unknown) => {}
                Ok(Claim::Decided(won)) => {
                    self.deliver(id, decision_of(&won));
                    return Err(decided_already(id, &won));
                }
                Err(e) => {
                    return Err(ApiError::unavailable(format!(
                        "the decision could not be recorded, so it did not take effect: {e}"
                    )));
                }
            }
        }
        self.settle(id, decision)
    }

    /// Hands approval `id`, still waiting here, the decision that took effect (claimed
    /// through another server); nothing when it is not waiting.
    pub fn deliver(&self, id: &str, decision: Decision) {
        let _ = self.settle(id, decision);
    }

    /// Whether approval `id` waits here.
    pub fn is_waiting(&self, id: &str) -> bool {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.iter().any(|p| p.ask.id == id)
    }

    /// Gives approval `id` its decision, when it waits.
    fn settle(&self, id: &str, decision: Decision) -> Result<(), ApiError> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some(i) = pending.iter().position(|p| p.ask.id == id) else {
            drop(pending);
            return Err(self.not_waiting(id));
        };
        let p = pending.remove(i);
        // Sent under the lock: a waiter that timed out finds it gone and reads it (`ask`).
        let _ = p.answer.try_send(decision.clone());
        self.close(id, &decision);
        drop(pending);
        self.tell_closed(id);
        Ok(())
    }

    /// Why a decision about `id` cannot be taken: it ended (409, the decision that won) or was
    /// never asked (404).
    fn not_waiting(&self, id: &str) -> ApiError {
        let closed = self.closed.lock().unwrap_or_else(|e| e.into_inner());
        let Some((_, won)) = closed.iter().find(|(c, _)| c == id) else {
            return ApiError::not_found(
                "approval_not_found",
                format!("no approval \"{id}\" was asked in this run"),
            );
        };
        decided_already(id, won)
    }

    /// Records the decision that took effect on approval `id`.
    fn close(&self, id: &str, decision: &Decision) {
        let won = match decision {
            Decision::Approve => json!({"decision": "approve"}),
            Decision::Deny(reason) => json!({"decision": "deny", "reason": reason}),
        };
        self.closed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((id.to_string(), won));
    }

    /// Tells the `on_closed` listener that approval `id` ended. Called with no other lock of
    /// these approvals held (the listener may read them).
    fn tell_closed(&self, id: &str) {
        let won = self
            .closed()
            .into_iter()
            .find(|(c, _)| c == id)
            .map(|(_, won)| won);
        let events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if let (Some(tell), Some(won)) = (&events.closed, won) {
            tell(id, &won);
        }
    }
}

impl Approver for Approvals {
    fn approve(&self, cap: &str, question: &str) -> Result<bool, String> {
        self.approve_call(&ApprovalAsk::plain(cap, question))
    }

    fn approve_call(&self, ask: &ApprovalAsk<'_>) -> Result<bool, String> {
        let (cap, question) = (ask.label, ask.question);
        let id = format!("approval_{}", self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (answer, decided) = std::sync::mpsc::sync_channel(1);
        {
            let asked_at = now_secs();
            let waiting = Asked {
                id: id.clone(),
                capability: cap.to_string(),
                question: question.to_string(),
                tool: (!ask.tool.is_empty()).then(|| ask.tool.to_string()),
                args: ask.args.cloned(),
                call_id: ask.call_id.map(str::to_string),
                asked_at,
                expires_at: asked_at + self.timeout.as_secs_f64(),
            };
            self.asked
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(waiting.clone());
            let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            // In the shared database before it is listed anywhere: a decision through
            // another server finds it. Under the list's lock, so `share` misses none.
            if let Some(book) = self.book.get() {
                book.record(&waiting);
            }
            pending.push(Pending {
                ask: waiting,
                answer,
            });
        }
        {
            let ev = Event::ApprovalRequested(Box::new(ApprovalAsked {
                id: id.clone(),
                capability: cap.to_string(),
                question: question.to_string(),
                call_id: ask.call_id.map(str::to_string),
                tool: (!ask.tool.is_empty()).then(|| ask.tool.to_string()),
                args: ask.args.cloned(),
            }));
            let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
            match &events.sink {
                Some(sink) => sink(ev),
                None => events.early.push(ev),
            }
        }
        let decided = self.wait(&id, &decided, &ask.ends);
        match decided {
            Ok(Decision::Approve) => Ok(true),
            Ok(Decision::Deny(reason)) if reason.is_empty() => Ok(false),
            Ok(Decision::Deny(reason)) => Err(format!("it was denied: {reason}")),
            Err(why) => Err(why),
        }
    }
}

impl Approvals {
    /// Waits for the decision on approval `id` until its timeout, or until the call is
    /// cancelled or its run's deadline passes: then the approval leaves the inbox, closed as
    /// denied for that reason (a later decision gets 409 saying so), and the call never runs.
    fn wait(
        &self,
        id: &str,
        decided: &std::sync::mpsc::Receiver<Decision>,
        ends: &kiln_core::context::WaitEnds,
    ) -> Result<Decision, String> {
        let until = std::time::Instant::now() + self.timeout;
        let mut read_shared = std::time::Instant::now() + READ_SHARED_EVERY;
        let why = loop {
            let now = std::time::Instant::now();
            if now >= until {
                break format!("nobody approved it within {} s", self.timeout.as_secs_f64());
            }
            if let Some(why) = ends.ended() {
                break why.to_string();
            }
            if let Some(book) = self.book.get().filter(|_| now >= read_shared) {
                read_shared = now + READ_SHARED_EVERY;
                if let Some(d) = book.decided(id) {
                    tracing::info!(approval = %id, "the approval's decision was read from the shared database");
                    self.deliver(id, decision_of(&d));
                }
            }
            match decided.recv_timeout((until - now).min(Duration::from_millis(20))) {
                Ok(d) => return Ok(d),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break "the approval was dropped".to_string();
                }
            }
        };
        // With a shared database the denial must win its claim there first: a decision
        // through another server may have come before.
        if let Some(book) = self.book.get()
            && let Ok(Claim::Decided(won)) =
                book.claim(id, &decision_json(&Decision::Deny(why.clone())))
        {
            self.deliver(id, decision_of(&won));
        }
        // Unless a decision took it off the list first (and sent it, under the same lock),
        // the reason the wait ended is the denial that takes effect.
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let still_waiting = pending.iter().any(|p| p.ask.id == id);
        pending.retain(|p| p.ask.id != id);
        if still_waiting {
            self.close(id, &Decision::Deny(why.clone()));
            drop(pending);
            self.tell_closed(id);
            return Err(why);
        }
        decided.try_recv().map_err(|_| why)
    }
}

/// A decision as the API and the database show it.
pub fn decision_json(decision: &Decision) -> Value {
    match decision {
        Decision::Approve => json!({"decision": "approve"}),
        Decision::Deny(reason) => json!({"decision": "deny", "reason": reason}),
    }
}

/// The decision `{"decision": ...}` says; anything but an approval denies.
pub fn decision_of(value: &Value) -> Decision {
    match value["decision"].as_str() {
        Some("approve") => Decision::Approve,
        _ => Decision::Deny(value["reason"].as_str().unwrap_or_default().to_string()),
    }
}

/// The 409 a decision about approval `id` gets when `won` (`{"decision": ...}`) took effect
/// before it, at either door.
pub fn decided_already(id: &str, won: &Value) -> ApiError {
    let how = match (won["decision"].as_str(), won["reason"].as_str()) {
        (Some("approve"), _) => "approved".to_string(),
        (_, Some(reason)) if !reason.is_empty() => format!("denied: {reason}"),
        _ => "denied".to_string(),
    };
    ApiError::conflict(
        "approval_decided",
        format!("approval \"{id}\" was already decided ({how}); this decision did not take effect"),
    )
    .with_field("decision", won.clone())
}

/// The longest deny reason passed on to the run, in characters; a longer one is cut, saying so.
pub const MAX_REASON: usize = 1000;

/// The decision a `POST .../approvals/{id}` body gives; a deny reason is cleaned (see
/// [`clean_reason`]) before the model or the run log sees it.
pub fn decision(body: &Value) -> Result<Decision, ApiError> {
    match body["decision"].as_str() {
        Some("approve") => Ok(Decision::Approve),
        Some("deny") => match &body["reason"] {
            Value::Null => Ok(Decision::Deny(String::new())),
            Value::String(reason) => Ok(Decision::Deny(clean_reason(reason))),
            _ => Err(ApiError::bad_request("reason", "reason must be a string")),
        },
        _ => Err(ApiError::bad_request(
            "decision",
            "decision must be \"approve\" or \"deny\" (with an optional reason)",
        )),
    }
}

/// A person's reason as the model and the run log may carry it: no control characters
/// (terminal escape sequences go whole), no bidirectional overrides or isolates, each run of
/// whitespace one space, and at most [`MAX_REASON`] characters, saying so when it was cut.
pub fn clean_reason(text: &str) -> String {
    let mut out = String::new();
    let mut kept = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            skip_escape(&mut chars);
            continue;
        }
        let c = if c.is_whitespace() { ' ' } else { c };
        let blank = c == ' ' && (out.is_empty() || out.ends_with(' '));
        if c.is_control() || is_bidi_control(c) || blank {
            continue;
        }
        if kept == MAX_REASON {
            let cut = out.trim_end();
            return format!("{cut} [cut: the reason was longer than {MAX_REASON} characters]");
        }
        out.push(c);
        kept += 1;
    }
    out.trim().to_string()
}

/// Skips the rest of an escape sequence after its ESC: a CSI (`ESC [ ... final`), an OSC
/// (`ESC ] ... BEL` or `ESC \\`), else the one character after ESC.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                    break;
                }
            }
        }
        _ => {}
    }
}

/// Characters that reorder the text around them on screen (Unicode's bidirectional controls).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_loses_controls_escapes_and_bidi_overrides() {
        let dirty = "\r\u{1b}[2J no\r\n\u{1b}[31mred\u{1b}[0m\u{0}\u{202e}txe\u{1b}]0;title\u{7} \t end\u{85}";
        assert_eq!(clean_reason(dirty), "no redtxe end");
    }

    #[test]
    fn a_long_reason_is_cut_and_says_so() {
        let cut = clean_reason(&"x".repeat(5000));
        assert!(cut.starts_with(&"x".repeat(MAX_REASON)), "{cut}");
        assert!(
            cut.ends_with("[cut: the reason was longer than 1000 characters]"),
            "{cut}"
        );
        assert_eq!(
            clean_reason(&"y".repeat(MAX_REASON)),
            "y".repeat(MAX_REASON)
        );
    }

    #[test]
    fn a_decision_reads_back_as_written_and_anything_else_denies() {
        for d in [
            Decision::Approve,
            Decision::Deny("no".into()),
            Decision::Deny(String::new()),
        ] {
            assert_eq!(decision_of(&decision_json(&d)), d);
        }
        assert_eq!(
            decision_of(&json!({"decision": "maybe"})),
            Decision::Deny(String::new())
        );
    }
}
