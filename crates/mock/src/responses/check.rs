//! Protocol checks of OpenAI's Responses API, with its error shapes: a missing key, tools in
//! Chat Completions' shape, a `function_call_output` whose call is not in the input, a call
//! left without its output, and reasoning items sent back without what `store: false` needs
//! (their `encrypted_content`) or without the item that followed them.

use crate::check::{Rejection, openai_error as error, valid_name};
use axum::http::HeaderMap;
use serde_json::{Value, json};

/// Whether an input item is a model's output sent back (a reasoning item, a function call, an
/// assistant message).
fn is_output(item: &Value) -> bool {
    matches!(
        item["type"].as_str(),
        Some("reasoning" | "function_call" | "tool_search_call" | "tool_search_output")
    ) || item["role"] == "assistant"
}

/// The assistant turns in a request's `input`: each run of output items is one.
pub fn assistant_turns(input: &Value) -> usize {
    let mut turns = 0;
    let mut in_output = false;
    for item in input.as_array().into_iter().flatten() {
        let output = is_output(item);
        if output && !in_output {
            turns += 1;
        }
        in_output = output;
    }
    turns
}

/// Checks a Responses request. `require_auth`: an `Authorization: Bearer` header (Azure's
/// routes check their own credential first and pass false).
pub fn check(headers: &HeaderMap, body: &Value, require_auth: bool) -> Result<(), Rejection> {
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
        return Err(error(
            400,
            "Missing required parameter: 'model'.",
            Some("model"),
            Some("missing_required_parameter"),
        ));
    }
    tools(&body["tools"])?;
    crate::offered::search::check_responses(body)?;
    crate::tool_choice::responses(body)?;
    let items = match &body["input"] {
        Value::String(_) => return Ok(()),
        Value::Array(items) => items,
        _ => {
            return Err(error(
                400,
                "Missing required parameter: 'input'.",
                Some("input"),
                Some("missing_required_parameter"),
            ));
        }
    };
    let stored = body["store"] != false;
    let mut calls: Vec<&str> = Vec::new();
    let mut answered: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item["type"].as_str() {
            Some("function_call") => {
                if !item["arguments"].is_string() {
                    return Err(error(
                        400,
                        format!(
                            "Invalid type for 'input[{i}].arguments': expected a string, but got {} instead.",
                            kind(&item["arguments"])
                        ),
                        Some(&format!("input[{i}].arguments")),
                        Some("invalid_type"),
                    ));
                }
                calls.push(item["call_id"].as_str().unwrap_or(""));
            }
            Some("function_call_output") => {
                let id = item["call_id"].as_str().unwrap_or("");
                if !calls.contains(&id) {
                    return Err(error(
                        400,
                        format!("No tool call found for function call output with call_id {id}."),
                        Some("input"),
                        None,
                    ));
                }
                answered.push(id);
            }
            Some("reasoning") => reasoning(i, item, items.get(i + 1), stored)?,
            Some("tool_search_call" | "tool_search_output") => {}
            _ => {
                let role = item["role"].as_str().unwrap_or("");
                if !matches!(role, "user" | "assistant" | "system" | "developer") {
                    return Err(error(
                        400,
                        format!(
                            "Invalid value: '{role}'. Supported values are: 'assistant', 'system', 'developer', and 'user'."
                        ),
                        Some(&format!("input[{i}].role")),
                        Some("invalid_value"),
                    ));
                }
                crate::parts::responses(i, &item["content"])?;
            }
        }
    }
    if let Some(id) = calls.iter().find(|c| !answered.contains(c)) {
        return Err(error(
            400,
            format!("No tool output found for function call {id}."),
            Some("input"),
            None,
        ));
    }
    Ok(())
}

/// Function tools: flat, with a name (Chat Completions' nested `function` is refused).
fn tools(tools: &Value) -> Result<(), Rejection> {
    for (i, t) in tools.as_array().into_iter().flatten().enumerate() {
        if t["type"] != "function" {
            continue;
        }
        let Some(name) = t["name"].as_str() else {
            return Err(error(
                400,
                format!("Missing required parameter: 'tools[{i}].name'."),
                Some(&format!("tools[{i}].name")),
                Some("missing_required_parameter"),
            ));
        };
        if !valid_name(name) {
            return Err(error(
                400,
                format!(
                    "Invalid 'tools[{i}].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
                ),
                Some(&format!("tools[{i}].name")),
                Some("invalid_value"),
            ));
        }
    }
    Ok(())
}

/// A reasoning item sent back: without storage, only its `encrypted_content` brings it back;
/// and the item it came before must follow it.
fn reasoning(i: usize, item: &Value, next: Option<&Value>, stored: bool) -> Result<(), Rejection> {
    let id = item["id"].as_str().unwrap_or("");
    if !stored && !item["encrypted_content"].is_string() {
        return Err(error(
            404,
            format!(
                "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
            ),
            Some(&format!("input[{i}]")),
            None,
        ));
    }
    if !next.is_some_and(|n| is_output(n) && n["type"] != "reasoning") {
        return Err(error(
            400,
            format!(
                "Item '{id}' of type 'reasoning' was provided without its required following item."
            ),
            Some("input"),
            None,
        ));
    }
    Ok(())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
