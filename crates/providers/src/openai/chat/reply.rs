//! OpenAI Chat Completions replies: a whole JSON reply parsed (typed first, `Value` when odd),
//! and what both the whole and the streamed reply end in (stop reason, usage, truncation).

use crate::error::quote;
use crate::{CallArgs, ModelResponse, ProviderError, StopReason, ToolCall, Usage, http};
use serde_json::{Value, json};

pub(crate) const NAME: &str = "openai";

pub(crate) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

pub(crate) fn stop_reason(s: Option<&str>, has_calls: bool) -> StopReason {
    match s {
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("stop") | None if has_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

pub(crate) fn usage(u: &Value) -> Usage {
    Usage {
        reasoning_tokens: 0,
        input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
    }
}

pub(crate) fn finish(
    text: String,
    calls: Vec<ToolCall>,
    finish_reason: Option<&str>,
    usage: Usage,
) -> Result<ModelResponse, ProviderError> {
    let stop = stop_reason(finish_reason, !calls.is_empty());
    if stop == StopReason::MaxTokens
        && let Some(last) = calls.last()
    {
        return Err(ProviderError::Truncated {
            provider: NAME,
            tool: quote(&last.name),
        });
    }
    Ok(ModelResponse {
        replay: None,
        answered_by: None,
        text,
        tool_calls: calls,
        stop,
        usage,
    })
}

/// Parses a whole (non-streamed) reply. Loops are driven by the presence of tool calls.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    if v.get("error").is_some_and(|e| !e.is_null()) {
        return Err(ProviderError::Stream {
            provider: NAME,
            message: http::error_message(&v.to_string()),
        });
    }
    let choice = v["choices"]
        .get(0)
        .ok_or_else(|| malformed("no choices in the reply"))?;
    let msg = &choice["message"];
    if !msg.is_object() {
        return Err(malformed("choice 0 has no `message` object"));
    }
    let text = msg["content"].as_str().unwrap_or_default().to_string();
    let mut calls = Vec::new();
    for (i, c) in msg["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let f = &c["function"];
        let name = f["name"]
            .as_str()
            .ok_or_else(|| malformed(format!("tool call {i} has no function name")))?;
        let args = match &f["arguments"] {
            Value::String(s) => CallArgs::from_text(s),
            Value::Null => CallArgs::parsed(json!({})),
            other => CallArgs::parsed(other.clone()),
        };
        calls.push(ToolCall {
            id: c["id"]
                .as_str()
                .map_or_else(|| format!("call_{i}"), str::to_string),
            name: name.to_string(),
            args,
        });
    }
    finish(
        text,
        calls,
        choice["finish_reason"].as_str(),
        usage(&v["usage"]),
    )
}

/// A whole reply of the usual shape, read without building a `Value` tree; `None` for anything
/// else (an error, a missing or odd field), which [`parse_response`] reads leniently and
/// names what is wrong.
pub(crate) fn typed_reply(bytes: &[u8]) -> Option<ModelResponse> {
    #[derive(serde::Deserialize)]
    struct Reply {
        #[serde(default)]
        error: Option<serde::de::IgnoredAny>,
        choices: Vec<Choice>,
        #[serde(default)]
        usage: Option<Value>,
    }
    #[derive(serde::Deserialize)]
    struct Choice {
        message: Msg,
        #[serde(default)]
        finish_reason: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Msg {
        #[serde(default)]
        content: Option<String>,
        #[serde(default)]
        tool_calls: Option<Vec<Call>>,
    }
    #[derive(serde::Deserialize)]
    struct Call {
        #[serde(default)]
        id: Option<String>,
        function: Function,
    }
    #[derive(serde::Deserialize)]
    struct Function {
        name: String,
        #[serde(default)]
        arguments: Option<String>,
    }
    let reply: Reply = serde_json::from_slice(bytes).ok()?;
    if reply.error.is_some() {
        return None;
    }
    let choice = reply.choices.into_iter().next()?;
    let calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c.id.unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            args: c
                .function
                .arguments
                .map_or_else(|| CallArgs::parsed(json!({})), |a| CallArgs::from_text(&a)),
        })
        .collect();
    finish(
        choice.message.content.unwrap_or_default(),
        calls,
        choice.finish_reason.as_deref(),
        usage(reply.usage.as_ref().unwrap_or(&Value::Null)),
    )
    .ok()
}
