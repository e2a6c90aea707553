//! The AI SDK's `useChat` request (`DefaultChatTransport`'s `{id, messages, trigger,
//! messageId}`) read into a run: `id` is the session, `messages` (UI messages with their parts)
//! the conversation — a user's text and files, an assistant's text and its tool parts with
//! their outputs, errors or denials — and the approvals a person answered (tool parts in state
//! `approval-responded`). Every error names its path (`messages[1].parts[3].output`).

use crate::doors::responses::input::{append_items, split_prompt};
use crate::error::ApiError;
use crate::table::approvals::{Decision, clean_reason};
use kiln_providers::{Attachment, Message};
use serde_json::{Value, json};

/// What one `useChat` request asks for.
pub(crate) struct UiChatInput {
    /// `id`: the chat, as the kiln session.
    pub chat_id: String,
    /// The conversation before the prompt.
    pub history: Vec<Message>,
    /// The last user message (empty when the conversation ends with tool outputs).
    pub prompt: String,
    /// Files on the prompt.
    pub attachments: Vec<Attachment>,
    /// System messages, for the system prompt.
    pub system: Vec<String>,
    /// Approvals a person answered: the approval's id and the decision.
    pub approvals: Vec<(String, Decision)>,
    /// The id of the last assistant message (a continuation streams into it).
    pub last_assistant: Option<String>,
}

/// Reads a `useChat` request.
pub(crate) fn parse(body: &Value) -> Result<UiChatInput, ApiError> {
    let chat_id = body["id"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            ApiError::bad_request("id", "id (the chat's id) must be a non-empty string")
        })?;
    let Some(list) = body["messages"].as_array().filter(|l| !l.is_empty()) else {
        return Err(ApiError::bad_request(
            "messages",
            "messages must be a non-empty array of UI messages",
        ));
    };
    let mut read = Read::default();
    for (i, m) in list.iter().enumerate() {
        // Only the last message's answers are this turn's (the rest were decided before).
        read.approvals.clear();
        read.message(m, i)?;
    }
    let last_assistant = list
        .last()
        .filter(|m| m["role"] == "assistant")
        .and_then(|m| m["id"].as_str())
        .map(str::to_string);
    let mut system = read.system;
    let mut messages = Vec::new();
    append_items(&mut messages, &read.items, &mut system)
        .map_err(|e| e.renamed(|p| item_path(p, &read.from)))?;
    let (history, prompt, attachments) = if read.approvals.is_empty() {
        split_prompt(messages).map_err(|_| {
            ApiError::bad_request(
                "messages",
                "messages must end with a user message, or an assistant message whose tool calls all have outputs",
            )
        })?
    } else {
        // An answered approval: the run that asked goes on where it waits.
        (Vec::new(), String::new(), Vec::new())
    };
    Ok(UiChatInput {
        chat_id,
        history,
        prompt,
        attachments,
        system,
        approvals: read.approvals,
        last_assistant,
    })
}

/// `input[K]...` of the Responses reader as the path of the part item K came from.
fn item_path(param: &str, from: &[String]) -> String {
    let k = param
        .strip_prefix("input[")
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(k, _)| k.parse::<usize>().ok());
    match k.and_then(|k| from.get(k)) {
        Some(path) => path.clone(),
        None => param.replace("input", "messages"),
    }
}

/// The conversation as the Responses door's input items, read message by message.
#[derive(Default)]
struct Read {
    items: Vec<Value>,
    /// The path of the message or part each item came from.
    from: Vec<String>,
    system: Vec<String>,
    approvals: Vec<(String, Decision)>,
}

impl Read {
    fn push(&mut self, item: Value, at: &str) {
        self.items.push(item);
        self.from.push(at.to_string());
    }

    fn message(&mut self, m: &Value, i: usize) -> Result<(), ApiError> {
        let at = format!("messages[{i}]");
        let Some(parts) = m["parts"].as_array() else {
            return Err(ApiError::bad_request(
                &format!("{at}.parts"),
                "parts must be an array",
            ));
        };
        match m["role"].as_str() {
            Some("user") => {
                let content = user_content(parts, &at)?;
                self.push(
                    json!({"type": "message", "role": "user", "content": content}),
                    &at,
                );
            }
            Some("system") => self.system.push(texts(parts)),
            Some("assistant") => self.assistant(parts, &at)?,
            _ => {
                return Err(ApiError::bad_request(
                    &format!("{at}.role"),
                    "role must be user, assistant or system",
                ));
            }
        }
        Ok(())
    }

    /// An assistant message: each step (split at `step-start`) as its text, then its calls,
    /// then their outputs, so one reply stays one assistant turn.
    fn assistant(&mut self, parts: &[Value], at: &str) -> Result<(), ApiError> {
        let mut steps: Vec<Vec<(usize, &Value)>> = vec![Vec::new()];
        for (j, p) in parts.iter().enumerate() {
            if p["type"] == "step-start" {
                steps.push(Vec::new());
            } else if let Some(step) = steps.last_mut() {
                step.push((j, p));
            }
        }
        for step in steps.iter().filter(|s| !s.is_empty()) {
            let text: String = step
                .iter()
                .filter(|(_, p)| p["type"] == "text")
                .filter_map(|(_, p)| p["text"].as_str())
                .collect();
            if !text.is_empty() {
                self.push(
                    json!({"type": "message", "role": "assistant", "content": text}),
                    at,
                );
            }
            let mut outputs = Vec::new();
            for (j, p) in step {
                let part_at = format!("{at}.parts[{j}]");
                if let Some(output) = self.tool_part(p, &part_at)? {
                    outputs.push((output, part_at));
                }
            }
            for (output, part_at) in outputs {
                self.push(output, &part_at);
            }
        }
        Ok(())
    }

    /// A tool part: its call pushed, and its output returned (to follow the step's calls);
    /// an answered approval is kept aside. Other parts (reasoning, data, sources) are none.
    fn tool_part(&mut self, p: &Value, at: &str) -> Result<Option<Value>, ApiError> {
        let kind = p["type"].as_str().unwrap_or_default();
        let name = match kind.strip_prefix("tool-") {
            Some(name) => name.to_string(),
            None if kind == "dynamic-tool" => {
                p["toolName"].as_str().unwrap_or_default().to_string()
            }
            None => return Ok(None),
        };
        let id = p["toolCallId"].as_str().ok_or_else(|| {
            ApiError::bad_request(&format!("{at}.toolCallId"), "a tool part has a toolCallId")
        })?;
        let output = match p["state"].as_str() {
            Some("output-available") => match &p["output"] {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            },
            Some("output-error") => {
                format!("error: {}", p["errorText"].as_str().unwrap_or("failed"))
            }
            Some("output-denied") => "denied: the person refused this call".to_string(),
            Some("approval-responded") => {
                let approval = &p["approval"];
                let Some(approval_id) = approval["id"].as_str() else {
                    return Err(ApiError::bad_request(
                        &format!("{at}.approval.id"),
                        "an answered approval has its id",
                    ));
                };
                let reason = approval["reason"]
                    .as_str()
                    .map(clean_reason)
                    .unwrap_or_default();
                let decision = match approval["approved"] {
                    Value::Bool(true) => Decision::Approve,
                    _ => Decision::Deny(reason),
                };
                self.approvals.push((approval_id.to_string(), decision));
                return Ok(None);
            }
            // Asked and not answered yet: the run that asked still holds the call.
            Some("approval-requested") => return Ok(None),
            Some(state) => {
                return Err(ApiError::bad_request(
                    &format!("{at}.state"),
                    format!(
                        "the tool call \"{id}\" ({name}) is {state}: send its output (addToolOutput) before the next message"
                    ),
                ));
            }
            None => {
                return Err(ApiError::bad_request(
                    &format!("{at}.state"),
                    "a tool part has a state",
                ));
            }
        };
        let args = match &p["input"] {
            Value::Null => "{}".to_string(),
            v => v.to_string(),
        };
        self.push(
            json!({"type": "function_call", "call_id": id, "name": name, "arguments": args}),
            at,
        );
        Ok(Some(
            json!({"type": "function_call_output", "call_id": id, "output": output}),
        ))
    }
}

/// The text parts of a message, joined.
fn texts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter(|p| p["type"] == "text")
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A user's parts: text, and files (`{type: "file", mediaType, url, filename}`) as images or
/// files for the model.
fn user_content(parts: &[Value], at: &str) -> Result<Value, ApiError> {
    let mut out = Vec::new();
    for (j, p) in parts.iter().enumerate() {
        match p["type"].as_str() {
            Some("text") => out.push(json!({"type": "input_text", "text": p["text"]})),
            Some("file") => {
                let url = p["url"].as_str().unwrap_or_default();
                let media = p["mediaType"].as_str().unwrap_or_default();
                if media.starts_with("image/") {
                    out.push(json!({"type": "input_image", "image_url": url}));
                } else if url.starts_with("data:") {
                    out.push(
                        json!({"type": "input_file", "file_data": url, "filename": p["filename"]}),
                    );
                } else {
                    out.push(
                        json!({"type": "input_file", "file_url": url, "filename": p["filename"]}),
                    );
                }
            }
            // The front end's own parts: its steps, its data.
            Some(kind) if kind == "step-start" || kind.starts_with("data-") => {}
            _ => {
                return Err(ApiError::bad_request(
                    &format!("{at}.parts[{j}].type"),
                    "a user's parts are text and files",
                ));
            }
        }
    }
    Ok(Value::Array(out))
}
