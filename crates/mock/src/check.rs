//! Protocol checks the real services make, with their error shapes: a request kiln gets wrong
//! fails against the mock the way it would fail against the service.

use axum::http::HeaderMap;
use serde_json::{Value, json};

pub use super::errors::{Rejection, anthropic_error, openai_error};

pub(crate) fn valid_name(n: &str) -> bool {
    (1..=64).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Checks a Messages API request.
pub fn anthropic(headers: &HeaderMap, body: &Value, require_auth: bool) -> Result<(), Rejection> {
    if require_auth && headers.get("x-api-key").is_none() && headers.get("authorization").is_none()
    {
        return Err(anthropic_error(
            401,
            "authentication_error",
            "x-api-key header is required",
        ));
    }
    if headers.get("anthropic-version").is_none() {
        return Err(anthropic_error(
            400,
            "invalid_request_error",
            "anthropic-version: header is required",
        ));
    }
    for field in ["model", "max_tokens", "messages"] {
        if body.get(field).is_none() {
            return Err(anthropic_error(
                400,
                "invalid_request_error",
                format!("{field}: Field required"),
            ));
        }
    }
    super::offered::search::check_anthropic(body)?;
    let tools = body["tools"].as_array().into_iter().flatten().enumerate();
    for (i, t) in tools.filter(|(_, t)| !super::offered::search::anthropic_server_tool(t)) {
        if !t["name"].as_str().is_some_and(valid_name) {
            return Err(anthropic_error(
                400,
                "invalid_request_error",
                format!(
                    "tools.{i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
                ),
            ));
        }
        if t["input_schema"]["type"] != "object" {
            return Err(anthropic_error(
                400,
                "invalid_request_error",
                format!("tools.{i}.custom.input_schema.type: Input should be 'object'"),
            ));
        }
    }
    super::tool_choice::anthropic(body)?;
    let raw = body["messages"].as_array().ok_or_else(|| {
        anthropic_error(
            400,
            "invalid_request_error",
            "messages: Input should be a valid list",
        )
    })?;
    let blocks = |m: &Value| -> Vec<Value> {
        match &m["content"] {
            Value::Array(a) => a.clone(),
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            _ => vec![],
        }
    };
    // A `system` message mid-conversation (the SDK's `SystemMessageParam`, which Claude Code
    // sends) carries text for the model and takes no part in the turn order.
    for (i, m) in raw
        .iter()
        .enumerate()
        .filter(|(_, m)| m["role"] == "system")
    {
        let text_only = match &m["content"] {
            Value::String(_) => true,
            Value::Array(blocks) => blocks.iter().all(|b| b["type"] == "text"),
            _ => false,
        };
        if !text_only {
            return Err(anthropic_error(
                400,
                "invalid_request_error",
                format!("messages.{i}.content: a system message holds text only"),
            ));
        }
    }
    // The API merges consecutive turns of one role before checking (error indices follow that).
    let mut msgs: Vec<Value> = Vec::new();
    for m in raw.iter().filter(|m| m["role"] != "system") {
        match msgs.last_mut() {
            Some(prev) if prev["role"] == m["role"] => {
                let mut merged = blocks(prev);
                merged.extend(blocks(m));
                prev["content"] = Value::Array(merged);
            }
            _ => msgs.push(m.clone()),
        }
    }
    let mut pending: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        if !matches!(role, "user" | "assistant") {
            return Err(anthropic_error(
                400,
                "invalid_request_error",
                format!("messages.{i}.role: Input should be 'user', 'assistant' or 'system'"),
            ));
        }
        let content = blocks(m);
        if role == "user" {
            if let Some(problem) = super::parts::anthropic(i, &content) {
                return Err(anthropic_error(400, "invalid_request_error", problem));
            }
            let results: Vec<String> = content
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .filter_map(|b| b["tool_use_id"].as_str().map(str::to_string))
                .collect();
            for (j, b) in content.iter().enumerate() {
                if b["type"] == "tool_result"
                    && !pending.iter().any(|p| b["tool_use_id"] == p.as_str())
                {
                    return Err(anthropic_error(
                        400,
                        "invalid_request_error",
                        format!(
                            "messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
                            b["tool_use_id"].as_str().unwrap_or("")
                        ),
                    ));
                }
            }
            let missing: Vec<&String> = pending.iter().filter(|p| !results.contains(p)).collect();
            if !missing.is_empty() {
                return Err(tool_use_without_result(i - 1, &missing));
            }
            let first_text = content.iter().position(|b| b["type"] != "tool_result");
            let last_result = content.iter().rposition(|b| b["type"] == "tool_result");
            if let (Some(t), Some(r)) = (first_text, last_result)
                && t < r
            {
                return Err(anthropic_error(
                    400,
                    "invalid_request_error",
                    format!(
                        "messages.{i}: `tool_result` blocks must come first in the content of a user message, before any other blocks"
                    ),
                ));
            }
            pending.clear();
        } else {
            if !pending.is_empty() {
                return Err(tool_use_without_result(
                    i - 1,
                    &pending.iter().collect::<Vec<_>>(),
                ));
            }
            if let Some(j) = content
                .iter()
                .position(|b| b["type"] == "tool_use" && !id_pattern(&b["id"]))
            {
                return Err(anthropic_error(
                    400,
                    "invalid_request_error",
                    format!(
                        "messages.{i}.content.{j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
                    ),
                ));
            }
            pending = content
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .filter_map(|b| b["id"].as_str().map(str::to_string))
                .collect();
        }
    }
    Ok(())
}

/// Whether a `tool_use` block's id is one the Messages API takes: `^[a-zA-Z0-9_-]+$`.
fn id_pattern(id: &Value) -> bool {
    id.as_str().is_some_and(|id| {
        !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    })
}

fn tool_use_without_result(i: usize, ids: &[&String]) -> Rejection {
    let ids: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
    anthropic_error(
        400,
        "invalid_request_error",
        format!(
            "messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
            ids.join(", ")
        ),
    )
}

/// OpenAI's rejection of tool calls whose `tool` replies are missing.
fn tool_calls_without_responses(pending: &[String], param: &str) -> Rejection {
    openai_error(
        400,
        format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            pending.join(", ")
        ),
        Some(param),
        None,
    )
}

/// Checks a Chat Completions request.
pub fn openai(headers: &HeaderMap, body: &Value, require_auth: bool) -> Result<(), Rejection> {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if require_auth && !auth.starts_with("Bearer ") {
        return Err((
            401,
            json!({"error": {"message": "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", "type": "invalid_request_error", "param": null, "code": null}}),
        ));
    }
    if !body["model"].is_string() {
        return Err(openai_error(
            400,
            "you must provide a model parameter",
            None,
            None,
        ));
    }
    let msgs = body["messages"].as_array().ok_or_else(|| {
        openai_error(
            400,
            "Missing required parameter: 'messages'.",
            Some("messages"),
            Some("missing_required_parameter"),
        )
    })?;
    for (i, t) in body["tools"].as_array().into_iter().flatten().enumerate() {
        if !t["function"]["name"].as_str().is_some_and(valid_name) {
            return Err(openai_error(
                400,
                format!(
                    "Invalid 'tools[{i}].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                ),
                Some(&format!("tools[{i}].function.name")),
                Some("invalid_value"),
            ));
        }
    }
    super::tool_choice::openai(body)?;
    let mut pending: Vec<String> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or("");
        let param = format!("messages.[{i}].role");
        if role == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or("");
            if !pending.iter().any(|p| p == id) {
                return Err(openai_error(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                    Some(&param),
                    None,
                ));
            }
            pending.retain(|p| p != id);
            continue;
        }
        if !pending.is_empty() {
            return Err(tool_calls_without_responses(&pending, &param));
        }
        if !matches!(role, "system" | "developer" | "user" | "assistant") {
            return Err(openai_error(
                400,
                format!(
                    "Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'."
                ),
                Some(&param),
                Some("invalid_value"),
            ));
        }
        if role == "user" {
            super::parts::openai(i, &m["content"])?;
        }
        if role == "assistant" {
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                if !c["function"]["arguments"].is_string() {
                    return Err(openai_error(
                        400,
                        format!(
                            "Invalid type for 'messages[{i}].tool_calls[0].function.arguments': expected a string."
                        ),
                        None,
                        Some("invalid_type"),
                    ));
                }
                pending.push(c["id"].as_str().unwrap_or("").to_string());
            }
        }
    }
    if !pending.is_empty() {
        return Err(tool_calls_without_responses(&pending, "messages"));
    }
    Ok(())
}

/// Checks an Ollama `/api/chat` request.
pub fn ollama(body: &Value) -> Result<(), Rejection> {
    if body["model"].as_str().is_none_or(|m| m.is_empty()) {
        return Err((400, json!({"error": "model is required"})));
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("");
        if !matches!(role, "system" | "user" | "assistant" | "tool") {
            return Err((400, json!({"error": format!("invalid role: {role}")})));
        }
        super::parts::ollama(m)?;
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            if !c["function"]["arguments"].is_object() {
                return Err((
                    400,
                    json!({"error": "json: cannot unmarshal string into Go struct field ToolCallFunction.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments"}),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("anthropic-version", "2023-06-01".parse().expect("header"));
        h.insert("x-api-key", "k".parse().expect("header"));
        h
    }

    #[test]
    fn a_system_message_among_the_turns_is_accepted_as_the_sdk_types_it() {
        // The shape Claude Code 2.1.197 sends: a system message after the first user turn,
        // between a tool_use and its tool_result's turn order unaffected.
        let body = json!({"model": "m", "max_tokens": 10, "stream": true,
        "thinking": {"type": "adaptive"}, "metadata": {"user_id": "{}"},
        "context_management": {"edits": []}, "output_config": {"effort": "high"},
        "system": [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]},
            {"role": "system", "content": "Available agent types..."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "mcp__kiln__calc", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "5"}]}
        ]});
        assert!(anthropic(&headers(), &body, true).is_ok());
        let bad = json!({"model": "m", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "image", "source": {}}]}
        ]});
        let (status, err) = anthropic(&headers(), &bad, true).expect_err("image in system");
        assert_eq!(status, 400);
        assert!(err.to_string().contains("messages.1.content"), "{err}");
        let odd =
            json!({"model": "m", "max_tokens": 10, "messages": [{"role": "tool", "content": "x"}]});
        let (_, err) = anthropic(&headers(), &odd, true).expect_err("tool role");
        assert!(err.to_string().contains("messages.0.role"), "{err}");
    }

    #[test]
    fn a_tool_use_id_outside_the_apis_pattern_is_refused() {
        let body = |id: &str| {
            json!({"model": "m", "max_tokens": 10, "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "t", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "5"}]}
            ]})
        };
        assert!(anthropic(&headers(), &body("toolu_01-x"), true).is_ok());
        let (status, err) =
            anthropic(&headers(), &body("weird id/../\u{0}"), true).expect_err("weird id");
        assert_eq!(status, 400);
        assert!(
            err.to_string()
                .contains("messages.1.content.0.tool_use.id: String should match pattern"),
            "{err}"
        );
    }
}
