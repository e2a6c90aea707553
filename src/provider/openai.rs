//! OpenAI Chat Completions (and compatible servers): wire conversion, JSON replies, SSE streams.

use super::sse;
use super::{
    CallArgs, Endpoint, Message, ModelRequest, ModelResponse, ProviderError, StopReason, TextSink,
    ToolCall, Usage, http,
};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

const NAME: &str = "openai";
/// Default base URL (the `/v1` prefix is part of it, as with every compatible server).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible endpoint.
pub struct OpenAi {
    /// Where and how to connect.
    pub endpoint: Endpoint,
}

/// The request body for a neutral request. `official` picks `max_completion_tokens`, which
/// OpenAI wants, over `max_tokens`, which compatible servers understand.
pub fn request_body(req: &ModelRequest, official: bool) -> Value {
    let mut msgs = Vec::new();
    if let Some(s) = &req.system {
        msgs.push(json!({"role": "system", "content": s}));
    }
    for m in &req.messages {
        match m {
            Message::User { content } => msgs.push(json!({"role": "user", "content": content})),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut a = json!({"role": "assistant", "content": if content.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(content) }});
                if !tool_calls.is_empty() {
                    let calls: Vec<Value> = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.args.to_text()}}))
                        .collect();
                    a["tool_calls"] = Value::Array(calls);
                }
                msgs.push(a);
            }
            Message::Tool { results } => {
                for r in results {
                    msgs.push(
                        json!({"role": "tool", "tool_call_id": r.call_id, "content": r.content}),
                    );
                }
            }
        }
    }
    let mut body = json!({"model": req.model, "messages": msgs});
    if !req.tools.is_empty() {
        body["tools"] = super::tool_definitions(&req.tools, crate::schema::Format::OpenAi);
    }
    body[if official {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }] = json!(req.max_tokens);
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if req.stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

fn stop_reason(s: Option<&str>, has_calls: bool) -> StopReason {
    match s {
        Some("tool_calls") | Some("function_call") => StopReason::ToolUse,
        Some("length") => StopReason::MaxTokens,
        Some("stop") | None if has_calls => StopReason::ToolUse,
        Some("stop") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

fn usage(u: &Value) -> Usage {
    Usage {
        input_tokens: u["prompt_tokens"].as_u64().unwrap_or(0),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
    }
}

fn finish(
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
            tool: last.name.clone(),
        });
    }
    Ok(ModelResponse {
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
            Value::Null => CallArgs::Parsed(json!({})),
            other => CallArgs::Parsed(other.clone()),
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

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates a Chat Completions SSE stream.
#[derive(Default)]
pub struct StreamState {
    text: String,
    calls: Vec<(u64, PartialCall)>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
}

impl sse::StreamState for StreamState {
    /// Applies one `data:` payload.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream chunk ({e}): {data}")))?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(ProviderError::Stream {
                provider: NAME,
                message: http::error_message(data),
            });
        }
        if chunk["usage"].is_object() {
            self.usage = usage(&chunk["usage"]);
        }
        for choice in chunk["choices"].as_array().into_iter().flatten() {
            let delta = &choice["delta"];
            if let Some(t) = delta["content"].as_str()
                && !t.is_empty()
            {
                self.text.push_str(t);
                sink(t);
            }
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let index = tc["index"].as_u64().unwrap_or(self.calls.len() as u64);
                let pos = match self.calls.iter().position(|(i, _)| *i == index) {
                    Some(p) => p,
                    None => {
                        self.calls.push((index, PartialCall::default()));
                        self.calls.len() - 1
                    }
                };
                let call = &mut self.calls[pos].1;
                if let Some(id) = tc["id"].as_str() {
                    call.id = id.to_string();
                }
                if let Some(n) = tc["function"]["name"].as_str() {
                    call.name.push_str(n);
                }
                if let Some(a) = tc["function"]["arguments"].as_str() {
                    call.arguments.push_str(a);
                }
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(r.to_string());
            }
        }
        Ok(())
    }

    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before a finish_reason or [DONE]".into(),
            });
        }
        let mut calls = Vec::new();
        for (i, (_, c)) in self.calls.into_iter().enumerate() {
            if c.name.is_empty() {
                return Err(malformed(format!("streamed tool call {i} has no name")));
            }
            let id = if c.id.is_empty() {
                format!("call_{i}")
            } else {
                c.id
            };
            calls.push(ToolCall {
                id,
                name: c.name,
                args: CallArgs::from_text(&c.arguments),
            });
        }
        finish(self.text, calls, self.finish_reason.as_deref(), self.usage)
    }
}

/// Parses a whole recorded SSE text (for tests and replay).
#[cfg(test)]
pub(crate) fn parse_sse(text: &str, sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    sse::parse_text::<StreamState>(text, sink)
}

impl OpenAi {
    /// Sends a request.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.endpoint.api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| malformed("the API key holds characters a header cannot"))?;
            v.set_sensitive(true);
            headers.insert(AUTHORIZATION, v);
        }
        let base = self.endpoint.base_url.trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let body = request_body(req, base.contains("api.openai.com"));
        let resp = http::post(NAME, &self.endpoint, &url, headers, &body).await?;
        if !req.stream {
            return Ok(sse::whole(
                parse_response(&http::json_body(NAME, resp).await?)?,
                sink,
            ));
        }
        sse::read_stream::<StreamState>(NAME, resp, sink).await
    }
}
