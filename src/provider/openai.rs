//! OpenAI Chat Completions (and compatible servers): wire conversion, JSON replies, SSE streams.

use super::error::quote;
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
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// The request body for a neutral request. `official` picks `max_completion_tokens`, which
/// OpenAI wants, over `max_tokens`, which compatible servers understand. (What
/// [`OpenAi::request_bytes`] sends; the tests hold the two together.)
#[cfg(test)]
pub fn request_body(req: &ModelRequest<'_>, official: bool) -> Value {
    let mut msgs = Vec::new();
    if let Some(s) = &req.system {
        msgs.push(json!({"role": "system", "content": s}));
    }
    for m in req.messages.iter() {
        wire_messages(m, &mut msgs);
    }
    body_around(req, official, msgs)
}

/// Each message of a conversation rendered once, as the JSON text of its wire messages: the
/// conversation only grows within a run, so a round renders only what is new and copies the
/// rest. An entry is reused only while its message is unchanged. The tool definitions are
/// kept the same way while the tools offered stay the same.
#[derive(Default)]
pub struct Rendered(std::sync::Mutex<RenderedParts>);

#[derive(Default)]
struct RenderedParts {
    messages: Vec<(Message, String)>,
    tools: (Vec<super::ToolDef>, String),
}

/// `request_body` as the bytes sent, the messages taken from `rendered` where they were
/// rendered before.
fn request_bytes(req: &ModelRequest<'_>, official: bool, rendered: &Rendered) -> Vec<u8> {
    const SLOT: &str = "\"messages\":[";
    // The frame holds an empty message list; a JSON string cannot hold an unescaped quote, so
    // the first `"messages":[` is the key itself.
    let bare = ModelRequest {
        model: req.model.clone(),
        system: None,
        messages: (&[][..]).into(),
        tools: Vec::new(),
        temperature: req.temperature,
        max_tokens: req.max_tokens,
        stream: req.stream,
        unchanged_prefix: 0,
    };
    let frame = body_around(&bare, official, Vec::new()).to_string();
    let at = frame.find(SLOT).map_or(frame.len(), |i| i + SLOT.len());
    let mut out = String::with_capacity(frame.len() + 1024);
    out.push_str(&frame[..at]);
    let mut push = |text: &str| {
        if !text.is_empty() {
            if !out.ends_with('[') {
                out.push(',');
            }
            out.push_str(text);
        }
    };
    if let Some(s) = &req.system {
        push(&json!({"role": "system", "content": s}).to_string());
    }
    let mut parts = rendered.0.lock().unwrap_or_else(|e| e.into_inner());
    let RenderedParts { messages, tools } = &mut *parts;
    for (i, m) in req.messages.iter().enumerate() {
        // Messages the caller promises unchanged are not compared again: comparing them all
        // each round made every round cost as much as the whole conversation.
        let reusable = messages.len() > i && (i < req.unchanged_prefix || messages[i].0 == *m);
        if !reusable {
            messages.truncate(i);
            let mut wire = Vec::new();
            wire_messages(m, &mut wire);
            let text: Vec<String> = wire.iter().map(Value::to_string).collect();
            messages.push((m.clone(), text.join(",")));
        }
        push(&messages[i].1);
    }
    messages.truncate(req.messages.len());
    // The tools follow the messages, where `body_around` puts them.
    let rest = frame.get(at..).unwrap_or_default();
    out.push_str(rest.get(..1).unwrap_or_default());
    if !req.tools.is_empty() {
        if tools.0 != req.tools {
            let defs = super::tool_definitions(&req.tools, crate::schema::Format::OpenAi);
            *tools = (req.tools.clone(), defs.to_string());
        }
        out.push_str(",\"tools\":");
        out.push_str(&tools.1);
    }
    out.push_str(rest.get(1..).unwrap_or_default());
    out.into_bytes()
}

/// The wire messages of one neutral message (tool results are one message each).
fn wire_messages(m: &Message, msgs: &mut Vec<Value>) {
    {
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
}

/// The body around its messages.
fn body_around(req: &ModelRequest<'_>, official: bool, msgs: Vec<Value>) -> Value {
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
            tool: quote(&last.name),
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

/// A whole reply of the usual shape, read without building a `Value` tree; `None` for anything
/// else (an error, a missing or odd field), which [`parse_response`] reads leniently and
/// names what is wrong.
fn typed_reply(bytes: &[u8]) -> Option<ModelResponse> {
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
                .map_or_else(|| CallArgs::Parsed(json!({})), |a| CallArgs::from_text(&a)),
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
    choices_seen: bool,
    done: bool,
}

/// A stream chunk of the usual shape, read without building a `Value` tree (most of a streamed
/// reply's cost). Anything else (an error, a missing or odd field) goes the `Value` way, which
/// reads leniently and names what is wrong.
#[derive(serde::Deserialize)]
struct Chunk {
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
}

#[derive(serde::Deserialize)]
struct ChunkChoice {
    delta: ChunkDelta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(serde::Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ChunkCall>>,
}

#[derive(serde::Deserialize)]
struct ChunkCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<ChunkFunction>,
}

#[derive(serde::Deserialize)]
struct ChunkFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

impl StreamState {
    /// Applies a chunk of the usual shape; false (nothing applied) for anything else.
    fn apply_typed(&mut self, data: &str, sink: &TextSink) -> bool {
        if !data.starts_with('{') {
            return false;
        }
        let Ok(Chunk {
            error: None,
            usage: reported,
            choices: Some(choices),
        }) = serde_json::from_str::<Chunk>(data)
        else {
            return false;
        };
        if let Some(u) = reported.filter(Value::is_object) {
            self.usage = usage(&u);
        }
        for choice in choices {
            self.choices_seen = true;
            self.text_delta(choice.delta.content.as_deref(), sink);
            for tc in choice.delta.tool_calls.into_iter().flatten() {
                let f = tc.function.as_ref();
                self.call_delta(
                    tc.index,
                    tc.id.as_deref(),
                    f.and_then(|f| f.name.as_deref()),
                    f.and_then(|f| f.arguments.as_deref()),
                );
            }
            if let Some(r) = choice.finish_reason {
                self.finish_reason = Some(r);
            }
        }
        true
    }

    /// Applies any chunk, read as a `Value` tree.
    fn apply_value(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream chunk ({e}): {}", quote(data))))?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(ProviderError::Stream {
                provider: NAME,
                message: http::error_message(data),
            });
        }
        if chunk["usage"].is_object() {
            self.usage = usage(&chunk["usage"]);
        }
        // The same shapes a whole reply must have (`choices`, each with a message): a stream
        // of `{"foo":1}` or of null deltas is malformed, never an empty answer. The last
        // chunk may carry only usage, with no choices.
        let Some(choices) = chunk["choices"].as_array() else {
            return Err(malformed(format!(
                "stream chunk without a `choices` array: {}",
                quote(data)
            )));
        };
        for choice in choices {
            let delta = &choice["delta"];
            if !delta.is_object() {
                return Err(malformed(format!(
                    "stream choice without a `delta` object: {}",
                    quote(data)
                )));
            }
            self.choices_seen = true;
            self.text_delta(delta["content"].as_str(), sink);
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let f = &tc["function"];
                self.call_delta(
                    tc["index"].as_u64(),
                    tc["id"].as_str(),
                    f["name"].as_str(),
                    f["arguments"].as_str(),
                );
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(r.to_string());
            }
        }
        Ok(())
    }

    /// Streamed answer text.
    fn text_delta(&mut self, text: Option<&str>, sink: &TextSink) {
        if let Some(t) = text.filter(|t| !t.is_empty()) {
            self.text.push_str(t);
            sink(t);
        }
    }

    /// A piece of tool call `index` (a call without an index is a new one).
    fn call_delta(
        &mut self,
        index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
    ) {
        let index = index.unwrap_or(self.calls.len() as u64);
        let pos = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(p) => p,
            None => {
                self.calls.push((index, PartialCall::default()));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos].1;
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(n) = name {
            call.name.push_str(n);
        }
        if let Some(a) = args {
            call.arguments.push_str(a);
        }
    }
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
        if self.apply_typed(data, sink) {
            return Ok(());
        }
        self.apply_value(data, sink)
    }

    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before a finish_reason or [DONE]".into(),
            });
        }
        if !self.choices_seen {
            return Err(malformed("no choices in the stream"));
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
    /// The request body as sent: messages rendered in earlier rounds are copied, not rendered
    /// again.
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        let official = self.endpoint.base_url.contains("api.openai.com");
        request_bytes(req, official, &self.rendered)
    }

    /// Sends a request body ([`OpenAi::request_bytes`]).
    pub async fn send(
        &self,
        body: bytes::Bytes,
        stream: bool,
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
        let limits = &self.endpoint.limits;
        let resp = http::post(NAME, &self.endpoint, &url, headers, body, stream).await?;
        if !stream {
            let body = http::whole_body(NAME, resp, limits).await?;
            let reply = match typed_reply(&body.bytes) {
                Some(reply) => reply,
                None => parse_response(&body.json()?)?,
            };
            return Ok(sse::whole(reply, sink));
        }
        sse::read_stream::<StreamState>(NAME, resp, limits, sink).await
    }
}

#[cfg(test)]
#[path = "openai_tests.rs"]
mod tests;
