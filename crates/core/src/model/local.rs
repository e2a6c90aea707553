//! The seam for models that run in this process — the script planner, or an embedder's own
//! model: a [`LocalModel`] gets the conversation as plain JSON ([`planner_input`]) and answers
//! with a [`ModelResponse`]. Nothing here knows Rhai; the script layer implements the trait.

use super::{Message, ModelRequest, ModelResponse, ProviderError, TextSink};
use serde_json::{Value, json};
use std::{future::Future, pin::Pin};

/// What [`LocalModel::send`] returns.
pub type LocalReply<'a> =
    Pin<Box<dyn Future<Output = Result<ModelResponse, ProviderError>> + Send + 'a>>;

/// A model that runs in this process (the providers crate's `Provider::Local`).
pub trait LocalModel: Send + Sync {
    /// The provider name reports and logs show (`script` for the Rhai planner).
    fn name(&self) -> &'static str;
    /// Answers one request: `input` is [`planner_input`] as JSON bytes; streamed text goes to
    /// `sink`.
    fn send<'a>(&'a self, input: &'a [u8], sink: &'a TextSink) -> LocalReply<'a>;
}

/// The conversation as the planner sees it: maps with `role`, `content`, `tool_calls`, and one
/// `#{ role: "tool", name, call_id, content, is_error }` per tool result.
pub fn planner_messages(req: &ModelRequest<'_>) -> Value {
    let mut out = Vec::new();
    if let Some(s) = &req.system {
        out.push(json!({"role": "system", "content": s}));
    }
    for m in req.messages.iter() {
        match m {
            Message::User { content, .. } => out.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "name": c.name, "args": c.args.to_value()}))
                    .collect();
                out.push(json!({"role": "assistant", "content": content, "tool_calls": calls}));
            }
            Message::Tool { results } => {
                for r in results {
                    let content = serde_json::from_str::<Value>(&r.content)
                        .unwrap_or_else(|_| json!(r.content));
                    out.push(json!({"role": "tool", "name": r.name, "call_id": r.call_id, "content": content, "is_error": r.is_error}));
                }
            }
        }
    }
    Value::Array(out)
}

/// What the planner is called with, as the script planner (kiln-script's `ScriptModel`) reads it back: its messages, the
/// tools offered and the round.
pub fn planner_input(req: &ModelRequest<'_>) -> Value {
    let tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.schema}))
        .collect();
    let round = req
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count();
    json!({"messages": planner_messages(req), "tools": tools, "round": round})
}
