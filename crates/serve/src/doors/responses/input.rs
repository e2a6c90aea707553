//! A Responses request read into a run: `input` (a string or items: messages of every role,
//! the client's `function_call`s and their `function_call_output`s, kiln's own `mcp_call`s
//! sent back) appended to the conversation it continues, the client's function tools, and
//! what the Response object echoes. Every refusal names the JSON path it is about.

use crate::body::{budget, number, object, positive, string_list};
use crate::doors::responses::parts::{Content, content};
use crate::error::ApiError;
use crate::launch::{RunRequest, find_agent};
use crate::running::Echo;
use crate::state::AppState;
use kiln_agent::connect::ProviderOverrides;
use kiln_providers::{Attachment, Message, ToolCall, ToolChoice, ToolDef, ToolResult};
use serde_json::{Value, json};

/// The parts of a Responses request kiln uses.
pub(crate) struct ResponsesRequest {
    /// The run: agent, overrides, caps, context, budget (`history` and `prompt` are set once
    /// the conversation it continues is known).
    pub run: RunRequest,
    /// `input` as items (a string becomes one user message).
    pub input_items: Vec<Value>,
    /// `previous_response_id`.
    pub previous: Option<String>,
    /// `store` (default true).
    pub store: bool,
    /// What the Response object repeats from the request.
    pub echo: Echo,
    /// `kiln.events`: the tools' progress and events in the stream, as `kiln:tool_progress`
    /// and `kiln:tool_event` events.
    pub tool_notes: bool,
}

/// `metadata`: at most 16 string values (as OpenAI's API takes it).
fn metadata(v: &Value) -> Result<Value, ApiError> {
    match v {
        Value::Null => Ok(json!({})),
        Value::Object(m) if m.len() <= 16 && m.values().all(Value::is_string) => Ok(v.clone()),
        _ => Err(ApiError::bad_request(
            "metadata",
            "metadata must be an object of at most 16 string values",
        )),
    }
}

/// The client's function tools: `{"type": "function", "name", "description", "parameters"}`.
pub(crate) fn client_tools(v: &Value) -> Result<(Vec<ToolDef>, Vec<Value>), ApiError> {
    let Some(list) = v.as_array() else {
        return match v {
            Value::Null => Ok((Vec::new(), Vec::new())),
            _ => Err(ApiError::bad_request("tools", "tools must be an array")),
        };
    };
    let mut defs: Vec<ToolDef> = Vec::new();
    let mut echoed = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let at = format!("tools[{i}]");
        match t["type"].as_str() {
            Some("function") => {}
            Some(other) => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    format!(
                        "tool type \"{other}\" is not supported: kiln agents take the client's function tools; their own tools are declared in their scripts"
                    ),
                ));
            }
            None => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    "type is required",
                ));
            }
        }
        let name = t["name"]
            .as_str()
            .filter(|n| valid_name(n))
            .ok_or_else(|| {
                ApiError::bad_request(
                    &format!("{at}.name"),
                    "name must be 1 to 64 letters, digits, '_' or '-'",
                )
            })?;
        if defs.iter().any(|d| d.name == name) {
            return Err(ApiError::bad_request(
                &format!("{at}.name"),
                format!("two tools are named \"{name}\""),
            ));
        }
        let parameters = match &t["parameters"] {
            Value::Null => json!({"type": "object", "properties": {}}),
            p @ Value::Object(_) => p.clone(),
            _ => {
                return Err(ApiError::bad_request(
                    &format!("{at}.parameters"),
                    "parameters must be a JSON Schema object",
                ));
            }
        };
        let description = t["description"].as_str().unwrap_or_default().to_string();
        echoed.push(json!({
            "type": "function",
            "name": name,
            "description": t["description"].as_str(),
            "parameters": parameters,
            "strict": t["strict"].as_bool(),
        }));
        defs.push(ToolDef {
            name: name.to_string(),
            description,
            schema: parameters.into(),
            deferred: false,
        });
    }
    Ok((defs, echoed))
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 64
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `tool_choice`: `auto`, `none`, `required` or one function by name (offered by the client
/// or the agent: the agent's are checked when the run starts).
fn tool_choice(v: &Value) -> Result<Value, ApiError> {
    match v {
        Value::Null => Ok(json!("auto")),
        Value::String(s) if matches!(s.as_str(), "auto" | "none" | "required") => Ok(v.clone()),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
            match o.get("name").and_then(Value::as_str) {
                Some(name) if valid_name(name) => Ok(json!({"type": "function", "name": name})),
                _ => Err(ApiError::bad_request(
                    "tool_choice.name",
                    "a function tool choice names the function",
                )),
            }
        }
        _ => Err(ApiError::bad_request(
            "tool_choice",
            "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": ...}",
        )),
    }
}

/// A checked `tool_choice` as the model request takes it.
pub(crate) fn choice_of(v: &Value) -> ToolChoice {
    match (v.as_str(), v["name"].as_str()) {
        (Some("none"), _) => ToolChoice::None,
        (Some("required"), _) => ToolChoice::Required,
        (_, Some(name)) => ToolChoice::Tool(name.to_string()),
        _ => ToolChoice::Auto,
    }
}

/// Reads a `POST /v1/responses` body.
pub(crate) fn parse(body: &Value) -> Result<ResponsesRequest, ApiError> {
    let agent = body["model"]
        .as_str()
        .ok_or_else(|| ApiError::bad_request("model", "model (the agent's name) is required"))?;
    // Asked for and silently not done would leave the client polling a response that is
    // already finished: refused, by name.
    match &body["background"] {
        Value::Null | Value::Bool(false) => {}
        _ => {
            return Err(ApiError::bad_request(
                "background",
                "background responses are not supported: leave background out (or false) and stream instead",
            ));
        }
    }
    let input_items = match &body["input"] {
        Value::String(s) => vec![json!({"type": "message", "role": "user", "content": s})],
        Value::Array(items) if !items.is_empty() => items.clone(),
        _ => {
            return Err(ApiError::bad_request(
                "input",
                "input must be a string or a non-empty array of items",
            ));
        }
    };
    let instructions = match &body["instructions"] {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        _ => {
            return Err(ApiError::bad_request(
                "instructions",
                "instructions must be a string",
            ));
        }
    };
    let previous = match &body["previous_response_id"] {
        Value::Null => None,
        Value::String(s) if !s.is_empty() && s.len() <= 256 => Some(s.clone()),
        _ => {
            return Err(ApiError::bad_request(
                "previous_response_id",
                "previous_response_id must be a response id",
            ));
        }
    };
    let bool_field = |field: &str, default: bool| match &body[field] {
        Value::Null => Ok(default),
        Value::Bool(b) => Ok(*b),
        _ => Err(ApiError::bad_request(
            field,
            format!("{field} must be true or false"),
        )),
    };
    let (client_tools, tools) = client_tools(&body["tools"])?;
    let echo = Echo {
        instructions: instructions.clone(),
        tools,
        tool_choice: tool_choice(&body["tool_choice"])?,
        parallel_tool_calls: bool_field("parallel_tool_calls", true)?,
        temperature: number(body, "temperature")?,
        top_p: number(body, "top_p")?,
        max_output_tokens: positive(body, "max_output_tokens")?,
        metadata: metadata(&body["metadata"])?,
        user: body["user"].as_str().map(str::to_string),
    };
    let kiln = &body["kiln"];
    let run = RunRequest {
        agent: agent.to_string(),
        overrides: ProviderOverrides {
            extra_system: instructions,
            temperature: echo.temperature,
            max_tokens: echo.max_output_tokens,
            tool_choice: Some(choice_of(&echo.tool_choice)),
            parallel_tool_calls: body["parallel_tool_calls"].as_bool(),
            ..ProviderOverrides::default()
        },
        caps: string_list(&kiln["caps"], "kiln.caps")?,
        caps_param: "kiln.caps",
        context: object(&kiln["context"], "kiln.context")?,
        actor: echo.user.clone(),
        stream: bool_field("stream", false)?,
        budget: budget(&kiln["budget"])?,
        client_tools,
        ..RunRequest::default()
    };
    Ok(ResponsesRequest {
        run,
        input_items,
        previous,
        store: bool_field("store", true)?,
        echo,
        tool_notes: crate::body::flag(&kiln["events"], "kiln.events")?,
    })
}

/// The conversation with `items` appended (their system and developer messages go to
/// `system`), checked: every function call answered before the conversation goes on.
pub(crate) fn append_items(
    messages: &mut Vec<Message>,
    items: &[Value],
    system: &mut Vec<String>,
) -> Result<(), ApiError> {
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        let kind = item["type"]
            .as_str()
            .or_else(|| item.get("role").map(|_| "message"));
        match kind {
            Some("message") => message(messages, item, &at, system)?,
            Some("function_call") => {
                let call = ToolCall {
                    id: text_field(item, "call_id", &at)?,
                    name: text_field(item, "name", &at)?,
                    args: arguments(&item["arguments"], &format!("{at}.arguments"))?,
                };
                push_call(messages, call);
            }
            Some("function_call_output") => {
                let call_id = text_field(item, "call_id", &at)?;
                let content = output_text(&item["output"], &format!("{at}.output"))?;
                push_result(messages, &call_id, content, false, &at)?;
            }
            Some("mcp_call") => {
                // kiln's own call, sent back by a client that keeps the conversation itself.
                let call = ToolCall {
                    id: text_field(item, "id", &at)?,
                    name: text_field(item, "name", &at)?,
                    args: arguments(&item["arguments"], &format!("{at}.arguments"))?,
                };
                let id = call.id.clone();
                push_call(messages, call);
                let (content, is_error) = match (&item["error"], &item["output"]) {
                    (Value::Null, out) => (output_text(out, &format!("{at}.output"))?, false),
                    (e, _) => (
                        e["message"]
                            .as_str()
                            .map_or_else(|| e.to_string(), str::to_string),
                        true,
                    ),
                };
                push_result(messages, &id, content, is_error, &at)?;
            }
            Some("compaction") => messages.push(super::parts::summary_of(item, &at)?),
            // Reasoning is the model's own; kiln's wires carry their own where they need it.
            Some("reasoning") => {}
            Some("item_reference") => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    "item_reference is not supported: send the item itself, or previous_response_id",
                ));
            }
            Some(other) => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    format!(
                        "input items of type \"{other}\" are not supported (message, function_call, function_call_output, mcp_call, compaction, reasoning)"
                    ),
                ));
            }
            None => {
                return Err(ApiError::bad_request(
                    &format!("{at}.type"),
                    "type is required",
                ));
            }
        }
    }
    check_answered(messages)
}

fn text_field(item: &Value, field: &str, at: &str) -> Result<String, ApiError> {
    item[field]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            ApiError::bad_request(&format!("{at}.{field}"), format!("{field} is required"))
        })
}

/// A call's `arguments`: a JSON object as text.
fn arguments(v: &Value, at: &str) -> Result<kiln_providers::CallArgs, ApiError> {
    let parsed = match v {
        Value::String(s) if s.trim().is_empty() => json!({}),
        Value::String(s) => serde_json::from_str::<Value>(s)
            .map_err(|e| ApiError::bad_request(at, format!("arguments are not JSON: {e}")))?,
        _ => {
            return Err(ApiError::bad_request(
                at,
                "arguments must be a JSON object as a string",
            ));
        }
    };
    if !parsed.is_object() {
        return Err(ApiError::bad_request(at, "arguments must be a JSON object"));
    }
    Ok(kiln_providers::CallArgs::parsed(parsed))
}

/// A `function_call_output`'s `output`: text, or text parts.
fn output_text(v: &Value, at: &str) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => parts
            .iter()
            .enumerate()
            .map(|(j, p)| match (p["type"].as_str(), p["text"].as_str()) {
                (Some("input_text" | "output_text" | "text"), Some(t)) => Ok(t.to_string()),
                _ => Err(ApiError::bad_request(
                    &format!("{at}[{j}]"),
                    "only text parts are supported in a tool's output",
                )),
            })
            .collect(),
        other => Ok(other.to_string()),
    }
}

/// A call joins the assistant turn it follows (text and calls are one reply), else starts one.
fn push_call(messages: &mut Vec<Message>, call: ToolCall) {
    if let Some(Message::Assistant { tool_calls, .. }) = messages.last_mut() {
        tool_calls.push(call);
        return;
    }
    messages.push(Message::Assistant {
        content: String::new(),
        tool_calls: vec![call],
        replay: None,
    });
}

/// A result joins the results of its assistant turn, in call order.
fn push_result(
    messages: &mut Vec<Message>,
    call_id: &str,
    content: String,
    is_error: bool,
    at: &str,
) -> Result<(), ApiError> {
    let turn = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }));
    let calls = match turn.map(|t| &messages[t]) {
        Some(Message::Assistant { tool_calls, .. }) => tool_calls.clone(),
        _ => Vec::new(),
    };
    let Some(call) = calls.iter().find(|c| c.id == call_id) else {
        return Err(ApiError::bad_request(
            &format!("{at}.call_id"),
            format!("no function call with call_id \"{call_id}\" is waiting for its output"),
        ));
    };
    let result = ToolResult {
        call_id: call_id.to_string(),
        name: call.name.clone(),
        content,
        is_error,
    };
    match messages.last_mut() {
        Some(Message::Tool { results }) => {
            if results.iter().any(|r| r.call_id == call_id) {
                return Err(ApiError::bad_request(
                    &format!("{at}.call_id"),
                    format!("call \"{call_id}\" was answered twice"),
                ));
            }
            results.push(result);
            let order = |r: &ToolResult| calls.iter().position(|c| c.id == r.call_id);
            results.sort_by_key(order);
        }
        _ => messages.push(Message::Tool {
            results: vec![result],
        }),
    }
    Ok(())
}

/// Every assistant turn's calls are answered before anything else is said.
fn check_answered(messages: &[Message]) -> Result<(), ApiError> {
    for (i, m) in messages.iter().enumerate() {
        let Message::Assistant { tool_calls, .. } = m else {
            continue;
        };
        if tool_calls.is_empty() {
            continue;
        }
        let answered: Vec<&str> = match messages.get(i + 1) {
            Some(Message::Tool { results }) => results.iter().map(|r| r.call_id.as_str()).collect(),
            _ => Vec::new(),
        };
        if let Some(missing) = tool_calls
            .iter()
            .find(|c| !answered.contains(&c.id.as_str()))
        {
            return Err(ApiError::bad_request(
                "input",
                format!(
                    "no function_call_output for call \"{}\" ({}): answer every function call before going on",
                    missing.id, missing.name
                ),
            ));
        }
    }
    Ok(())
}

/// One `message` item: its text (and, for a user, its images and files).
fn message(
    messages: &mut Vec<Message>,
    item: &Value,
    at: &str,
    system: &mut Vec<String>,
) -> Result<(), ApiError> {
    let at_content = format!("{at}.content");
    let Content { text, attachments } = content(&item["content"], &at_content)?;
    let role = item["role"].as_str();
    if !attachments.is_empty() && role != Some("user") {
        return Err(ApiError::bad_request(
            &at_content,
            "only a user's message carries images and files",
        ));
    }
    match role {
        Some("system" | "developer") => system.push(text),
        Some("user") => messages.push(Message::User {
            content: text,
            attachments,
        }),
        Some("assistant") => messages.push(Message::Assistant {
            content: text,
            tool_calls: Vec::new(),
            replay: None,
        }),
        Some(other) => {
            return Err(ApiError::bad_request(
                &format!("{at}.role"),
                format!("role \"{other}\" is not supported (user, assistant, system, developer)"),
            ));
        }
        None => {
            return Err(ApiError::bad_request(
                &format!("{at}.role"),
                "role is required",
            ));
        }
    }
    Ok(())
}

/// The conversation split into what came before and the run's prompt (the last user
/// message, with its attachments), or no prompt when it ends with the client's function
/// outputs (the run goes on from them).
pub(crate) fn split_prompt(
    mut messages: Vec<Message>,
) -> Result<(Vec<Message>, String, Vec<Attachment>), ApiError> {
    match messages.last() {
        Some(Message::User { .. }) => match messages.pop() {
            Some(Message::User {
                content,
                attachments,
            }) => Ok((messages, content, attachments)),
            _ => Err(ApiError::internal("the last message changed")),
        },
        Some(Message::Tool { .. }) => Ok((messages, String::new(), Vec::new())),
        _ => Err(ApiError::bad_request(
            "input",
            "the input must end with a user message or the outputs of the function calls",
        )),
    }
}

/// The client's tools must not shadow the agent's own, and a forced tool must be offered.
pub(crate) fn check_tool_names(state: &AppState, req: &ResponsesRequest) -> Result<(), ApiError> {
    let agent = find_agent(state, &req.run.agent)?;
    if let Some(forced) = req.echo.tool_choice["name"].as_str() {
        let offered = req.run.client_tools.iter().any(|t| t.name == forced)
            || agent.tools.iter().any(|own| own == forced);
        if !offered {
            return Err(ApiError::bad_request(
                "tool_choice.name",
                format!(
                    "no tool named \"{forced}\" is offered: neither the request's tools nor agent \"{}\"'s",
                    agent.name
                ),
            ));
        }
    }
    for (i, t) in req.run.client_tools.iter().enumerate() {
        if agent.tools.iter().any(|own| own == &t.name) {
            return Err(ApiError::bad_request(
                &format!("tools[{i}].name"),
                format!(
                    "agent \"{}\" has a tool named \"{}\" of its own: name the client's tool otherwise",
                    agent.name, t.name
                ),
            ));
        }
    }
    Ok(())
}

/// Input items with ids, as `input_items` lists them.
pub(crate) fn with_ids(items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, mut item)| {
            if item.get("id").and_then(Value::as_str).is_none() {
                item["id"] = json!(format!("in_{}_{i}", uuid::Uuid::new_v4().simple()));
            }
            if item.get("type").is_none() {
                item["type"] = json!("message");
            }
            let listed = matches!(
                item["type"].as_str(),
                Some("message" | "function_call" | "function_call_output")
            );
            if listed && item.get("status").is_none() {
                item["status"] = json!("completed");
            }
            // A message's text as the one part it stands for, as the list's items have it.
            if item["type"] == "message"
                && let Some(text) = item["content"].as_str().map(str::to_string)
            {
                let part = if item["role"] == "assistant" {
                    crate::doors::responses::output::text_part(&text)
                } else {
                    json!({"type": "input_text", "text": text})
                };
                item["content"] = json!([part]);
            }
            item
        })
        .collect()
}

#[cfg(test)]
#[path = "input_tests.rs"]
mod tests;
