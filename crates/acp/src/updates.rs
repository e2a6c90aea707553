//! A run's events as ACP `session/update`s: answer text as `agent_message_chunk`, tool calls
//! as `tool_call` (announced once, of the kind their capabilities say) and `tool_call_update`
//! (progress, then the outcome), the loop's rounds and calls as a `plan`; and a saved
//! session's messages replayed the same way.

use kiln_agent::{Event, ToolCallRecord};
use kiln_core::context::call_events::ToolNote;
use kiln_core::model::Message;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

/// The tool calls a prompt has announced (`tool_call` sent), shared with the approver, which
/// announces a call before asking about it; and each tool's ACP kind.
#[derive(Default)]
pub struct Calls {
    announced: Mutex<HashSet<String>>,
    kinds: HashMap<String, &'static str>,
}

impl Calls {
    /// No call announced yet, the kinds of `tools`' calls known.
    pub fn for_tools(tools: &[std::sync::Arc<kiln_core::tool::Tool>]) -> Calls {
        let kinds = tools
            .iter()
            .map(|t| {
                let caps: Vec<String> = t.requires.iter().map(ToString::to_string).collect();
                (t.name.clone(), kind_of(&caps))
            })
            .collect();
        Calls {
            announced: Mutex::default(),
            kinds,
        }
    }

    /// Marks `id` announced; true when it was not yet.
    pub fn announce(&self, id: &str) -> bool {
        self.announced
            .lock()
            .is_ok_and(|mut s| s.insert(id.to_string()))
    }

    /// The ACP kind of a call of `tool` (`other` for a tool not known).
    pub fn kind(&self, tool: &str) -> &'static str {
        self.kinds.get(tool).copied().unwrap_or("other")
    }
}

/// The ACP tool kind a tool's capabilities say: it writes files (`edit`), reads them
/// (`read`), reaches the network (`fetch`), runs a command (`execute`: the client's terminal),
/// else `other`; the strongest wins.
pub fn kind_of(caps: &[String]) -> &'static str {
    let has = |name: &str| {
        caps.iter()
            .any(|c| c == name || c.starts_with(&format!("{name}:")))
    };
    match () {
        _ if has("terminal") => "execute",
        _ if has("fs.write") => "edit",
        _ if has("fs.read") => "read",
        _ if has("net") => "fetch",
        _ => "other",
    }
}

/// A text chunk of kind `kind` (`agent_message_chunk`, `user_message_chunk`).
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// A `tool_call` announcing call `id` of `tool` (of ACP `kind`) with `args`, in `status`.
pub fn tool_call(id: &str, tool: &str, kind: &str, args: &Value, status: &str) -> Value {
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": tool,
        "kind": kind,
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
                vec![tool_call(id, name, calls.kind(name), args, "in_progress")]
            } else {
                vec![
                    json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress"}),
                ]
            }
        }
        Event::Thought { text, .. } => vec![chunk("agent_thought_chunk", text)],
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
        out.push(tool_call(
            &r.id,
            &r.name,
            calls.kind(&r.name),
            &r.args,
            "pending",
        ));
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
pub fn replay(messages: &[Message], calls: &Calls) -> Vec<Value> {
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
                    let kind = calls.kind(&c.name);
                    out.push(tool_call(
                        &c.id,
                        &c.name,
                        kind,
                        &c.args.to_value(),
                        "pending",
                    ));
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

/// The loop's rounds and calls as the plan an editor shows: each model request and each tool
/// call an entry, in progress until it is done; the whole list sent at each change.
#[derive(Default)]
pub struct Plan {
    entries: Vec<(String, &'static str)>,
}

impl Plan {
    /// The plan after `ev`, when it changed it.
    pub fn on(&mut self, ev: &Event) -> Option<Value> {
        match ev {
            Event::ModelRequest { round } => {
                self.entries
                    .push((format!("Round {round}: ask the model"), "in_progress"));
            }
            Event::ModelReply { round } => {
                self.done(&format!("Round {round}: ask the model"));
            }
            Event::ToolStarted { name, .. } => {
                self.entries.push((format!("Call {name}"), "in_progress"));
            }
            Event::ToolFinished(r) => self.done(&format!("Call {}", r.name)),
            Event::Finished(_) if !self.entries.is_empty() => {
                for e in &mut self.entries {
                    e.1 = "completed";
                }
            }
            _ => return None,
        }
        let entries: Vec<Value> = (self.entries.iter())
            .map(|(content, status)| {
                json!({"content": content, "priority": "medium", "status": status})
            })
            .collect();
        Some(json!({"sessionUpdate": "plan", "entries": entries}))
    }

    /// Marks the first entry `content` still in progress completed.
    fn done(&mut self, content: &str) {
        if let Some(e) = (self.entries.iter_mut()).find(|e| e.0 == content && e.1 == "in_progress")
        {
            e.1 = "completed";
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tools_kind_comes_from_its_capabilities() {
        let caps = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(kind_of(&caps(&["fs.read", "fs.write:notes"])), "edit");
        assert_eq!(kind_of(&caps(&["fs.read"])), "read");
        assert_eq!(kind_of(&caps(&["net:api.example.com"])), "fetch");
        assert_eq!(kind_of(&caps(&["store", "network"])), "other");
        assert_eq!(kind_of(&caps(&["terminal:cargo", "fs.write"])), "execute");
    }

    #[test]
    fn the_plan_follows_the_rounds_and_calls() {
        let mut plan = Plan::default();
        assert!(plan.on(&Event::Text("x".into())).is_none());
        plan.on(&Event::ModelRequest { round: 1 });
        let p = plan.on(&Event::ModelReply { round: 1 }).expect("a change");
        assert_eq!(p["entries"][0]["status"], "completed");
        let p = plan
            .on(&Event::ToolStarted {
                round: 1,
                id: "c1".into(),
                name: "add".into(),
                args: Value::Null.into(),
            })
            .expect("a change");
        assert_eq!(
            p["entries"][1],
            json!({"content": "Call add", "priority": "medium", "status": "in_progress"})
        );
    }
}
