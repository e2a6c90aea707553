//! AG-UI's `RunAgentInput` read into a run: `threadId` and `runId`, `messages` (user,
//! assistant with `toolCalls`, tool results, system and developer; reasoning and activity
//! messages are the front end's own and skipped) as the conversation, `tools` as tools the
//! front end runs, `context` as lines of the system prompt, `state` as `ctx.state`, and
//! `resume` as the decisions on the interrupts a run finished with. Every error names the
//! field (`messages[2].toolCalls[0].function.arguments`).

use crate::doors::responses::input::{append_items, client_tools, split_prompt};
use crate::error::ApiError;
use crate::table::approvals::{Decision, clean_reason};
use kiln_providers::{Attachment, Message, ToolDef};
use serde_json::{Value, json};

/// What one AG-UI request asks for.
pub(crate) struct AgUiInput {
    /// `threadId`: the kiln session.
    pub thread_id: String,
    /// `runId`: the front end's name of this run.
    pub run_id: String,
    /// The conversation before the prompt.
    pub history: Vec<Message>,
    /// The last user message (empty when the conversation ends with tool results).
    pub prompt: String,
    /// Images on the prompt.
    pub attachments: Vec<Attachment>,
    /// The front end's tools.
    pub client_tools: Vec<ToolDef>,
    /// `context` and system messages, for the system prompt.
    pub system: Vec<String>,
    /// `state`, when sent.
    pub state: Option<Value>,
    /// `resume`: each interrupt's id and its decision.
    pub resume: Vec<(String, Decision)>,
}

/// Reads a `RunAgentInput`.
pub(crate) fn parse(body: &Value) -> Result<AgUiInput, ApiError> {
    let text = |field: &str| {
        body[field]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| {
                ApiError::bad_request(field, format!("{field} must be a non-empty string"))
            })
    };
    let (thread_id, run_id) = (text("threadId")?, text("runId")?);
    let mut system = context_lines(&body["context"])?;
    let resume = resume(&body["resume"])?;
    // A resumed run goes on where it waits: the messages the front end sends are its copy
    // (its call waiting for the decision has no result yet).
    let (history, prompt, attachments) = if !resume.is_empty() {
        (Vec::new(), String::new(), Vec::new())
    } else {
        let (items, from) = items(&body["messages"])?;
        let mut messages = Vec::new();
        append_items(&mut messages, &items, &mut system)
            .map_err(|e| e.renamed(|p| message_path(p, &from)))?;
        split_prompt(messages).map_err(|_| {
            ApiError::bad_request(
                "messages",
                "messages must end with a user message or the results of the front end's tool calls",
            )
        })?
    };
    let tools = tools(&body["tools"])?;
    let (client_tools, _) = client_tools(&tools)?;
    let state = match &body["state"] {
        Value::Null => None,
        s => Some(s.clone()),
    };
    Ok(AgUiInput {
        thread_id,
        run_id,
        history,
        prompt,
        attachments,
        client_tools,
        system,
        state,
        resume,
    })
}

/// `context`: `[{description, value}]`, each a line of the system prompt.
fn context_lines(v: &Value) -> Result<Vec<String>, ApiError> {
    let Some(list) = v.as_array() else {
        return match v {
            Value::Null => Ok(Vec::new()),
            _ => Err(ApiError::bad_request("context", "context must be an array")),
        };
    };
    let mut lines = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let (Some(d), Some(value)) = (c["description"].as_str(), c["value"].as_str()) else {
            return Err(ApiError::bad_request(
                &format!("context[{i}]"),
                "each context entry has a description and a value (strings)",
            ));
        };
        lines.push(format!("{d}: {value}"));
    }
    Ok(match lines.is_empty() {
        true => lines,
        false => vec![format!(
            "Context from the application:\n{}",
            lines.join("\n")
        )],
    })
}

/// The front end's tools as the Responses door's function tools.
fn tools(v: &Value) -> Result<Value, ApiError> {
    let Some(list) = v.as_array() else {
        return match v {
            Value::Null => Ok(Value::Null),
            _ => Err(ApiError::bad_request("tools", "tools must be an array")),
        };
    };
    let mut out = Vec::new();
    for t in list {
        let mut f = json!({"type": "function", "name": t["name"], "description": t["description"]});
        let parameters = match &t["parameters"] {
            Value::Null => json!({"type": "object", "properties": {}}),
            p => p.clone(),
        };
        f["parameters"] = parameters;
        out.push(f);
    }
    Ok(Value::Array(out))
}

/// `input[K].rest` of the Responses reader as `messages[I]` of the message item K came from.
fn message_path(param: &str, from: &[usize]) -> String {
    let Some(rest) = param.strip_prefix("input[") else {
        return param.to_string();
    };
    let Some((k, _)) = rest.split_once(']') else {
        return param.to_string();
    };
    match k.parse::<usize>().ok().and_then(|k| from.get(k)) {
        Some(i) => format!("messages[{i}]"),
        None => "messages".to_string(),
    }
}

/// AG-UI messages as the Responses door's input items, with the message each came from.
fn items(v: &Value) -> Result<(Vec<Value>, Vec<usize>), ApiError> {
    let Some(list) = v.as_array() else {
        return Err(ApiError::bad_request(
            "messages",
            "messages must be an array",
        ));
    };
    let mut items = Vec::new();
    let mut from = Vec::new();
    for (i, m) in list.iter().enumerate() {
        let at = format!("messages[{i}]");
        let content = |m: &Value| -> Result<String, ApiError> {
            match &m["content"] {
                Value::String(s) => Ok(s.clone()),
                Value::Null => Ok(String::new()),
                Value::Array(parts) => Ok(parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n")),
                _ => Err(ApiError::bad_request(
                    &format!("{at}.content"),
                    "content must be a string or a list of parts",
                )),
            }
        };
        match m["role"].as_str() {
            Some("user") => items
                .push(json!({"type": "message", "role": "user", "content": user_content(m, &at)?})),
            Some("system" | "developer") => {
                items.push(json!({"type": "message", "role": "system", "content": content(m)?}))
            }
            Some("assistant") => {
                let text = content(m)?;
                if !text.is_empty() {
                    items.push(json!({"type": "message", "role": "assistant", "content": text}));
                }
                for (j, call) in m["toolCalls"].as_array().into_iter().flatten().enumerate() {
                    let f = &call["function"];
                    let (Some(id), Some(name)) = (call["id"].as_str(), f["name"].as_str()) else {
                        return Err(ApiError::bad_request(
                            &format!("{at}.toolCalls[{j}]"),
                            "a tool call has an id and function.name",
                        ));
                    };
                    let args = f["arguments"].as_str().unwrap_or("{}");
                    items.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": args}));
                }
            }
            Some("tool") => {
                let Some(id) = m["toolCallId"].as_str() else {
                    return Err(ApiError::bad_request(
                        &format!("{at}.toolCallId"),
                        "a tool message names its toolCallId",
                    ));
                };
                let output = match m["error"].as_str() {
                    Some(e) => format!("error: {e}"),
                    None => content(m)?,
                };
                items
                    .push(json!({"type": "function_call_output", "call_id": id, "output": output}));
            }
            // The front end's own: its thoughts shown and its activity cards.
            Some("reasoning" | "activity") => {}
            _ => {
                return Err(ApiError::bad_request(
                    &format!("{at}.role"),
                    "role must be user, assistant, tool, system, developer, reasoning or activity",
                ));
            }
        }
        from.resize(items.len(), i);
    }
    Ok((items, from))
}

/// A user message's content: text, and images given as data (`{type: "image", source:
/// {type: "data", value, mimeType}}`) or URLs.
fn user_content(m: &Value, at: &str) -> Result<Value, ApiError> {
    let Some(parts) = m["content"].as_array() else {
        return Ok(json!(m["content"].as_str().unwrap_or_default()));
    };
    let mut out = Vec::new();
    for (k, p) in parts.iter().enumerate() {
        match (p["type"].as_str(), &p["source"]) {
            (Some("text"), _) => out.push(json!({"type": "input_text", "text": p["text"]})),
            (Some("image"), s) if s["type"] == "data" => out.push(json!({"type": "input_image",
                "image_url": format!("data:{};base64,{}", s["mimeType"].as_str().unwrap_or("image/png"), s["value"].as_str().unwrap_or(""))})),
            (Some("image"), s) if s["type"] == "url" => {
                out.push(json!({"type": "input_image", "image_url": s["value"]}))
            }
            _ => {
                return Err(ApiError::bad_request(
                    &format!("{at}.content[{k}]"),
                    "kiln takes text parts and images (as data or a URL) from a user",
                ));
            }
        }
    }
    Ok(Value::Array(out))
}

/// `resume`: `[{interruptId, status: "resolved"|"cancelled", payload: {approved, reason}}]`.
fn resume(v: &Value) -> Result<Vec<(String, Decision)>, ApiError> {
    let Some(list) = v.as_array() else {
        return match v {
            Value::Null => Ok(Vec::new()),
            _ => Err(ApiError::bad_request("resume", "resume must be an array")),
        };
    };
    let mut out = Vec::new();
    for (i, r) in list.iter().enumerate() {
        let at = format!("resume[{i}]");
        let Some(id) = r["interruptId"].as_str() else {
            return Err(ApiError::bad_request(
                &format!("{at}.interruptId"),
                "interruptId must be a string",
            ));
        };
        let reason = r["payload"]["reason"]
            .as_str()
            .map(clean_reason)
            .unwrap_or_default();
        let decision = match (r["status"].as_str(), &r["payload"]["approved"]) {
            (Some("resolved"), Value::Bool(true)) => Decision::Approve,
            (Some("resolved"), Value::Bool(false)) | (Some("cancelled"), _) => {
                Decision::Deny(reason)
            }
            _ => {
                return Err(ApiError::bad_request(
                    &at,
                    "resume an approval with status \"resolved\" and payload {\"approved\": true|false, \"reason\"?}, or status \"cancelled\"",
                ));
            }
        };
        out.push((id.to_string(), decision));
    }
    Ok(out)
}
