//! A run's events as ACP `session/update`s: answer text as `agent_message_chunk`, tool calls
//! as `tool_call` (announced once) and `tool_call_update` (progress, then the outcome); and a
//! saved session's messages replayed the same way.

use kiln_agent::{Event, ToolCallRecord};
use kiln_core::context::call_events::ToolNote;
use kiln_core::model::Message;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Mutex;

/// The tool calls a prompt has announced (`tool_call` sent), shared with the approver, which
/// announces a call before asking about it.
#[derive(Default)]
pub struct Calls(Mutex<HashSet<String>>);

impl Calls {
    /// Marks `id` announced; true when it was not yet.
    pub fn announce(&self, id: &str) -> bool {
        self.0.lock().is_ok_and(|mut s| s.insert(id.to_string()))
    }
}

/// A text chunk of kind `kind` (`agent_message_chunk`, `user_message_chunk`).
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// A `tool_call` announcing call `id` of `tool` with `args`, in `status`.
pub fn tool_call(id: &str, tool: &str, args: &Value, status: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": tool,
        "kind": "other",
        "status": status,
        "rawInput": args,
    })
}

/// Tool call content: one text block.
pub fn text_content(text: &str) -> Value {
    json!([{"type": "content", "content": {"type": "text", "text": text}}])
}

/// The updates for one of the run's events (none for most but text and tool calls).
pub fn on_event(ev: &Event, calls: &Calls) -> Vec<Value> {
    match ev {
        Event::Text(t) if !t.is_empty() => vec![chunk("agent_message_chunk", t)],
        Event::ToolStarted { id, name, args, .. } => {
            if calls.announce(id) {
                vec![tool_call(id, name, args, "in_progress")]
            } else {
                vec![
                    json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress"}),
                ]
            }
        }
        Event::ToolNote { id, note, .. } => vec![json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": id,
            "status": "in_progress",
            "content": text_content(&note_text(note)),
        })],
        Event::ToolFinished(r) => finished(r, calls),
        _ => Vec::new(),
    }
}

/// A finished call's update: its outcome as content and `rawOutput`, completed or failed
/// (announced first when it never started, as a call refused before it ran).
fn finished(r: &ToolCallRecord, calls: &Calls) -> Vec<Value> {
    let mut out = Vec::new();
    if calls.announce(&r.id) {
        out.push(tool_call(&r.id, &r.name, &r.args, "pending"));
    }
    let text = match (r.outcome.result(), r.outcome.error()) {
        (Some(v), _) => result_text(v),
        (None, Some(e)) => e.message.clone(),
        (None, None) => String::new(),
    };
    out.push(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": r.id,
        "status": if r.is_error { "failed" } else { "completed" },
        "content": text_content(&text),
        "rawOutput": r.outcome.to_json(),
    }));
    out
}

/// A result as text: a string as it is, other JSON as JSON.
fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A note as a line: `3/10 row 3`, or `event: {json}`.
fn note_text(note: &ToolNote) -> String {
    match note {
        ToolNote::Progress {
            done,
            total,
            message,
        } => {
            let mut s = match total {
                Some(t) => format!("{done}/{t}"),
                None => format!("{done}"),
            };
            if let Some(m) = message {
                s.push(' ');
                s.push_str(m);
            }
            s
        }
        ToolNote::Emit { name, value } => format!("{name}: {value}"),
    }
}

/// A saved conversation as updates, in order: the person's words as `user_message_chunk`,
/// the model's as `agent_message_chunk`, its calls as `tool_call` and their results as
/// `tool_call_update`.
pub fn replay(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in messages {
        match m {
            Message::User { content, .. } => out.push(chunk("user_message_chunk", content)),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.is_empty() {
                    out.push(chunk("agent_message_chunk", content));
                }
                for c in tool_calls {
                    out.push(tool_call(&c.id, &c.name, &c.args.to_value(), "pending"));
                }
            }
            Message::Tool { results } => {
                for r in results {
                    out.push(json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": r.call_id,
                        "status": if r.is_error { "failed" } else { "completed" },
                        "content": text_content(&r.content),
                    }));
                }
            }
        }
    }
    out
}
