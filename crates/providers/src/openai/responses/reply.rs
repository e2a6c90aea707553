//! OpenAI Responses replies: a `response` object (a whole reply, or the one a stream's
//! `response.completed` carries) read into a neutral reply: the `output` items' text and
//! function calls, the items to send back ([`Replay`]), the stop reason and usage.

use crate::error::quote;
use crate::{CallArgs, ModelResponse, ProviderError, Replay, StopReason, ToolCall, Usage, http};
use serde_json::{Value, json};

/// The wire's name in errors.
pub const NAME: &str = "openai-responses";

/// The wire's name on a [`Replay`] (OpenAI's and Azure's Responses routes alike).
pub const WIRE: &str = "openai-responses";

pub(crate) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

/// Token usage: `input_tokens`, `output_tokens` and, of those, `reasoning_tokens`.
pub(crate) fn usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["output_tokens"].as_u64().unwrap_or(0),
        reasoning_tokens: u["output_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap_or(0),
    }
}

/// The error a `response` with a non-null `error` (or `status: failed`) is.
pub(crate) fn failed(response: &Value) -> ProviderError {
    let e = &response["error"];
    let message = match (e["code"].as_str(), e["message"].as_str()) {
        (Some(code), Some(m)) => format!("{code}: {m}"),
        (None, Some(m)) => m.to_string(),
        _ => format!("the response failed: {}", quote(&response.to_string())),
    };
    ProviderError::Stream {
        provider: NAME,
        message,
    }
}

/// Parses a whole (non-streamed) reply.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    if !v.is_object() {
        return Err(malformed(format!(
            "the reply is not a response object: {}",
            quote(&v.to_string())
        )));
    }
    if v.get("error").is_some_and(|e| !e.is_null()) && v.get("output").is_none() {
        // An error body, not a response.
        return Err(ProviderError::Stream {
            provider: NAME,
            message: http::error_message(&v.to_string()),
        });
    }
    read_response(v)
}

/// A `response` object read: its status, output items and usage.
pub(crate) fn read_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    if v["status"] == "failed" || v.get("error").is_some_and(|e| !e.is_null()) {
        return Err(failed(v));
    }
    let output = v["output"].as_array().ok_or_else(|| {
        malformed(format!(
            "the response has no `output` array: {}",
            quote(&v.to_string())
        ))
    })?;
    let (text, calls) = read_output(output)?;
    let stop = match (
        v["status"].as_str(),
        v["incomplete_details"]["reason"].as_str(),
    ) {
        (Some("incomplete"), Some("max_output_tokens")) => StopReason::MaxTokens,
        (Some("incomplete"), reason) => StopReason::Other(reason.unwrap_or("incomplete").into()),
        _ if !calls.is_empty() => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    };
    if stop == StopReason::MaxTokens
        && let Some(last) = calls.last()
    {
        return Err(ProviderError::Truncated {
            provider: NAME,
            tool: quote(&last.name),
        });
    }
    // The items are sent back only where they carry what a later request needs and kiln's
    // transcript lacks: reasoning (or any other item kind).
    let kept = output
        .iter()
        .any(|item| !matches!(item["type"].as_str(), Some("message" | "function_call")));
    Ok(ModelResponse {
        answered_by: None,
        text,
        tool_calls: calls,
        stop,
        usage: usage(&v["usage"]),
        replay: kept.then(|| Replay {
            wire: WIRE.into(),
            data: Value::Array(output.clone()),
        }),
    })
}

/// The text of the output messages and the function calls among `output`'s items.
fn read_output(output: &[Value]) -> Result<(String, Vec<ToolCall>), ProviderError> {
    let mut text = String::new();
    let mut calls = Vec::new();
    for (i, item) in output.iter().enumerate() {
        match item["type"].as_str() {
            Some("message") => {
                let parts = item["content"].as_array().ok_or_else(|| {
                    malformed(format!(
                        "output item {i} (a message) has no `content` array"
                    ))
                })?;
                for part in parts {
                    match part["type"].as_str() {
                        Some("output_text") => text.push_str(part["text"].as_str().unwrap_or("")),
                        Some("refusal") => text.push_str(part["refusal"].as_str().unwrap_or("")),
                        _ => {}
                    }
                }
            }
            Some("function_call") => calls.push(function_call(i, item)?),
            Some(_) => {}
            None => {
                return Err(malformed(format!(
                    "output item {i} has no `type`: {}",
                    quote(&item.to_string())
                )));
            }
        }
    }
    Ok((text, calls))
}

/// A `function_call` item as a call: its `call_id` is the id its output answers.
pub(crate) fn function_call(i: usize, item: &Value) -> Result<ToolCall, ProviderError> {
    let name = item["name"]
        .as_str()
        .ok_or_else(|| malformed(format!("function call {i} has no `name`")))?;
    let args = match &item["arguments"] {
        Value::String(s) => CallArgs::from_text(s),
        Value::Null => CallArgs::parsed(json!({})),
        other => CallArgs::parsed(other.clone()),
    };
    let id = item["call_id"]
        .as_str()
        .or_else(|| item["id"].as_str())
        .unwrap_or_default();
    Ok(ToolCall {
        id: id.to_string(),
        name: name.to_string(),
        args,
    })
}
