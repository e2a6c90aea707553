//! kiln's approvals as ACP permission requests: a call that needs a person's yes (a tool on a
//! grant marked `.needs_approval([...])`, a call policy's question) is announced as a
//! `tool_call`, then asked with `session/request_permission` and three options: allow once,
//! allow always (for this session: not asked again for that tool and capability), reject.

use crate::session::Session;
use crate::updates::{Calls, text_content, tool_call};
use crate::wire::Outbox;
use kiln_core::context::{ApprovalAsk, Approver};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

/// The option ids offered, and what each decides.
const ALLOW_ONCE: &str = "allow_once";
/// Allow, and remember for the session.
const ALLOW_ALWAYS: &str = "allow_always";
/// Refuse.
const REJECT_ONCE: &str = "reject_once";

/// Asks the client, for one prompt's run.
pub struct Permission {
    /// Where the request goes.
    pub outbox: Arc<Outbox>,
    /// The session (what was allowed always).
    pub session: Arc<Session>,
    /// The prompt's announced calls.
    pub calls: Arc<Calls>,
    /// The prompt's cancellation: a cancelled prompt stops waiting.
    pub cancel: CancellationToken,
    /// Numbers the asks that come from no known call.
    pub asks: AtomicU64,
}

impl Permission {
    /// The `toolCall` of the request: the asking call, announced first when it was not.
    fn tool_call(&self, ask: &ApprovalAsk<'_>) -> Value {
        let id = match ask.call_id {
            Some(id) => id.to_string(),
            None => format!("approval-{}", self.asks.fetch_add(1, Ordering::Relaxed) + 1),
        };
        let args = ask.args.cloned().unwrap_or(Value::Null);
        if self.calls.announce(&id) {
            let update = tool_call(&id, ask.tool, self.calls.kind(ask.tool), &args, "pending");
            self.outbox.notify(
                "session/update",
                json!({"sessionId": self.session.id, "update": update}),
            );
        }
        json!({
            "toolCallId": id,
            "title": ask.tool,
            "kind": self.calls.kind(ask.tool),
            "status": "pending",
            "rawInput": args,
            "content": text_content(ask.question),
        })
    }
}

/// The options offered with every request.
fn options() -> Value {
    json!([
        {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
        {"optionId": ALLOW_ALWAYS, "name": "Allow always (this session)", "kind": "allow_always"},
        {"optionId": REJECT_ONCE, "name": "Reject", "kind": "reject_once"},
    ])
}

/// The decision in a `RequestPermissionResponse`: the option selected, or why there is none.
pub fn decision(answer: &Value) -> Result<&str, String> {
    let outcome = answer.get("outcome");
    match outcome
        .and_then(|o| o.get("outcome"))
        .and_then(Value::as_str)
    {
        Some("selected") => outcome
            .and_then(|o| o.get("optionId"))
            .and_then(Value::as_str)
            .ok_or_else(|| "the client selected no optionId".to_string()),
        Some("cancelled") => Err("the client cancelled the question".into()),
        _ => Err("the client's answer has no outcome".into()),
    }
}

impl Approver for Permission {
    fn approve(&self, cap: &str, question: &str) -> Result<bool, String> {
        self.approve_call(&ApprovalAsk::plain(cap, question))
    }

    fn approve_call(&self, ask: &ApprovalAsk<'_>) -> Result<bool, String> {
        if self.session.allowed_always(ask.tool, ask.label) {
            return Ok(true);
        }
        let params = json!({
            "sessionId": self.session.id,
            "toolCall": self.tool_call(ask),
            "options": options(),
        });
        let waiting = self.outbox.request("session/request_permission", params);
        let cancel = self.cancel.clone();
        let ends = ask.ends.clone();
        let answer = waiting.wait(move || {
            if cancel.is_cancelled() {
                return Some("the prompt was cancelled".to_string());
            }
            ends.ended().map(str::to_string)
        })?;
        match decision(&answer)? {
            ALLOW_ONCE => Ok(true),
            ALLOW_ALWAYS => {
                self.session.allow_always(ask.tool, ask.label);
                Ok(true)
            }
            REJECT_ONCE => Ok(false),
            other => Err(format!(
                "the client selected \"{other}\", which was not offered"
            )),
        }
    }
}
