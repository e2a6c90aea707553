//! Anthropic Messages API: wire conversion, JSON replies and SSE streams.

use super::error::quote;
use super::{
    CallArgs, Endpoint, Message, ModelRequest, ModelResponse, ProviderError, StopReason, TextSink,
    ToolCall, Usage, http,
};
use super::{rendered, sse};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

const NAME: &str = "anthropic";
/// The API version header kiln speaks.
pub const API_VERSION: &str = "2023-06-01";
/// Default base URL.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// An Anthropic endpoint.
pub struct Anthropic {
    /// Where and how to connect.
    pub endpoint: Endpoint,
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// The request body for a neutral request, rendered whole (what [`Anthropic::request_bytes`]
/// sends; the tests hold the two together).
pub fn request_body(req: &ModelRequest<'_>) -> Value {
    let tools = (!req.tools.is_empty()).then(|| tool_definitions(&req.tools));
    body_around(req, messages(&req.messages), tools)
}

/// The body around its messages and tool definitions (none: no tools offered).
fn body_around(req: &ModelRequest<'_>, msgs: Vec<Value>, tools: Option<Value>) -> Value {
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens,
        "messages": msgs,
    });
    if let Some(s) = &req.system {
        body["system"] = json!(s);
    }
    if let Some(tools) = tools {
        body["tools"] = tools;
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if req.stream {
        body["stream"] = json!(true);
    }
    body
}

fn tool_definitions(tools: &[super::ToolDef]) -> Value {
    super::tool_definitions(tools, kiln_core::schema::Format::Anthropic)
}

/// Neutral messages -> Anthropic messages. Tool results go first in the next user message;
/// consecutive user turns are merged, as the API requires alternation.
pub fn messages(msgs: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in msgs {
        let (role, blocks) = blocks(m);
        match out.last_mut() {
            Some(prev) if prev["role"] == role => {
                if let Some(arr) = prev["content"].as_array_mut() {
                    arr.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    // A lone text block is sent as a plain string, as the SDKs do.
    for m in out.iter_mut() {
        let single_text = m["content"]
            .as_array()
            .filter(|a| a.len() == 1 && a[0]["type"] == "text")
            .map(|a| a[0]["text"].clone());
        if let Some(text) = single_text {
            m["content"] = text;
        }
    }
    out
}

/// The role of a neutral message on the wire and its content blocks.
fn blocks(m: &Message) -> (&'static str, Vec<Value>) {
    match m {
        Message::User { content } => ("user", vec![json!({"type": "text", "text": content})]),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut blocks = Vec::new();
            if !content.is_empty() {
                blocks.push(json!({"type": "text", "text": content}));
            }
            for c in tool_calls {
                let input = match &c.args {
                    CallArgs::Parsed(v @ Value::Object(_)) => v.clone(),
                    _ => json!({}),
                };
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            ("assistant", blocks)
        }
        Message::Tool { results } => {
            let blocks = results
                .iter()
                .map(|r| {
                    let mut b = json!({"type": "tool_result", "tool_use_id": r.call_id, "content": r.content});
                    if r.is_error {
                        b["is_error"] = json!(true);
                    }
                    b
                })
                .collect();
            ("user", blocks)
        }
    }
}

/// One neutral message rendered as Anthropic content blocks: the wire merges a run of
/// messages of one role into one message, so a message is its blocks, not a wire message.
pub struct Blocks {
    role: &'static str,
    /// The blocks' JSON text, comma-joined.
    text: String,
    count: usize,
    /// When the message is one text block: the text as a JSON string (a wire message of one
    /// text block is sent as that string).
    lone_text: Option<String>,
}

impl Blocks {
    fn of(m: &Message) -> Blocks {
        let (role, blocks) = blocks(m);
        let lone_text = match blocks.as_slice() {
            [b] if b["type"] == "text" => Some(b["text"].to_string()),
            _ => None,
        };
        Blocks {
            role,
            text: rendered::joined(&blocks),
            count: blocks.len(),
            lone_text,
        }
    }
}

/// Each message of a conversation rendered once, as its content blocks.
pub type Rendered = rendered::Rendered<Blocks>;

/// Writes the wire message of `run`, messages of one role, as the next item in `out`.
fn write_message(out: &mut String, run: &[Blocks]) {
    let Some(first) = run.first() else {
        return;
    };
    rendered::separate(out);
    out.push_str("{\"role\":\"");
    out.push_str(first.role);
    out.push_str("\",\"content\":");
    let lone = match run.iter().map(|b| b.count).sum::<usize>() {
        1 => run.iter().find_map(|b| b.lone_text.as_deref()),
        _ => None,
    };
    match lone {
        Some(text) => out.push_str(text),
        None => {
            out.push('[');
            for b in run {
                rendered::push_item(out, &b.text);
            }
            out.push(']');
        }
    }
    out.push('}');
}

/// [`request_body`] as the bytes sent, the messages taken from `cache` where they were
/// rendered before.
fn request_bytes(req: &ModelRequest<'_>, cache: &Rendered) -> Vec<u8> {
    cache.render(req, &Request(req))
}

/// A request as the Anthropic wire renders it.
struct Request<'r, 'a>(&'r ModelRequest<'a>);

impl rendered::Wire for Request<'_, '_> {
    type Part = Blocks;

    fn part(&self, m: &Message) -> Blocks {
        Blocks::of(m)
    }

    fn joins(&self, prev: &Blocks, next: &Blocks) -> bool {
        prev.role == next.role
    }

    fn write(&self, out: &mut String, run: &[Blocks]) {
        write_message(out, run);
    }

    fn tools(&self, tools: &[super::ToolDef]) -> Value {
        tool_definitions(tools)
    }

    fn frame(&self, tools: Option<Value>) -> Value {
        body_around(self.0, Vec::new(), tools)
    }
}

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

/// Parses a whole (non-streamed) reply.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    if v["type"] == "error" {
        return Err(ProviderError::Stream {
            provider: NAME,
            message: http::error_message(&v.to_string()),
        });
    }
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| malformed("no `content` array"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => calls.push(ToolCall {
                id: b["id"]
                    .as_str()
                    .ok_or_else(|| malformed("tool_use without id"))?
                    .to_string(),
                name: b["name"]
                    .as_str()
                    .ok_or_else(|| malformed("tool_use without name"))?
                    .to_string(),
                args: CallArgs::Parsed(b.get("input").cloned().unwrap_or(json!({}))),
            }),
            _ => {}
        }
    }
    let stop = stop_reason(v["stop_reason"].as_str());
    if stop == StopReason::MaxTokens
        && let Some(last) = calls.last()
    {
        return Err(ProviderError::Truncated {
            provider: NAME,
            tool: quote(&last.name),
        });
    }
    let usage = Usage {
        input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
    };
    Ok(ModelResponse {
        text,
        tool_calls: calls,
        stop,
        usage,
    })
}

enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
        done: bool,
    },
    Other,
}

/// Accumulates a Messages SSE stream into a reply.
#[derive(Default)]
pub struct StreamState {
    order: Vec<(u64, Block)>,
    text: String,
    usage: Usage,
    stop: Option<String>,
    started: bool,
    finished: bool,
}

impl sse::StreamState for StreamState {
    /// Applies one event's data; streamed text goes to `sink`.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream event ({e}): {}", quote(data))))?;
        let index = ev["index"].as_u64().unwrap_or(0);
        // The same shapes a whole reply must have: a stream of `{"foo":1}` or of a null
        // message is as malformed as the reply `{"foo":1}`, never an empty answer.
        let Some(kind) = ev["type"].as_str() else {
            return Err(malformed(format!(
                "stream event without a `type`: {}",
                quote(data)
            )));
        };
        let object = |field: &str| {
            if ev[field].is_object() {
                Ok(())
            } else {
                Err(malformed(format!(
                    "{kind} event without a `{field}` object: {}",
                    quote(data)
                )))
            }
        };
        match kind {
            "message_start" => object("message")?,
            "content_block_start" => object("content_block")?,
            "content_block_delta" | "message_delta" => object("delta")?,
            _ => {}
        }
        match kind {
            "message_start" => {
                self.started = true;
                let u = &ev["message"]["usage"];
                self.usage.input_tokens = u["input_tokens"].as_u64().unwrap_or(0);
                self.usage.output_tokens = u["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                let b = &ev["content_block"];
                let block = match b["type"].as_str() {
                    Some("text") => {
                        let t = b["text"].as_str().unwrap_or_default();
                        if !t.is_empty() {
                            self.text.push_str(t);
                            sink(t);
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool {
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: b["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                        done: false,
                    },
                    _ => Block::Other,
                };
                self.order.push((index, block));
            }
            "content_block_delta" => {
                let d = &ev["delta"];
                let block = self
                    .order
                    .iter_mut()
                    .rev()
                    .find(|(i, _)| *i == index)
                    .map(|(_, b)| b);
                match (d["type"].as_str(), block) {
                    (Some("text_delta"), _) => {
                        let t = d["text"].as_str().unwrap_or_default();
                        self.text.push_str(t);
                        sink(t);
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(d["partial_json"].as_str().unwrap_or_default())
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(malformed(format!(
                            "input_json_delta for unknown block {index}"
                        )));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some((_, Block::Tool { done, .. })) =
                    self.order.iter_mut().rev().find(|(i, _)| *i == index)
                {
                    *done = true;
                }
            }
            "message_delta" => {
                if let Some(s) = ev["delta"]["stop_reason"].as_str() {
                    self.stop = Some(s.to_string());
                }
                if let Some(o) = ev["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = o;
                }
            }
            "message_stop" => self.finished = true,
            "error" => {
                return Err(ProviderError::Stream {
                    provider: NAME,
                    message: http::error_message(data),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.started && (self.finished || self.stop.is_some()) {
            return Err(malformed("the stream has no message_start"));
        }
        let stop = stop_reason(self.stop.as_deref());
        let mut calls = Vec::new();
        for (_, b) in self.order {
            if let Block::Tool {
                id,
                name,
                json,
                done,
            } = b
            {
                if !done || stop == StopReason::MaxTokens {
                    return Err(ProviderError::Truncated {
                        provider: NAME,
                        tool: quote(&name),
                    });
                }
                calls.push(ToolCall {
                    id,
                    name,
                    args: CallArgs::from_text(&json),
                });
            }
        }
        if !self.finished && self.stop.is_none() {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before message_stop".into(),
            });
        }
        Ok(ModelResponse {
            text: self.text,
            tool_calls: calls,
            stop,
            usage: self.usage,
        })
    }
}

impl Anthropic {
    /// The request body as sent: messages rendered in earlier rounds are copied, not rendered
    /// again.
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        request_bytes(req, &self.rendered)
    }

    /// Sends a request body ([`Anthropic::request_bytes`]).
    pub async fn send(
        &self,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let key = self
            .endpoint
            .api_key
            .clone()
            .ok_or_else(|| ProviderError::MissingKey {
                provider: NAME,
                var: "ANTHROPIC_API_KEY".into(),
            })?;
        let mut headers = HeaderMap::new();
        let mut key = HeaderValue::from_str(&key)
            .map_err(|_| malformed("the API key holds characters a header cannot"))?;
        key.set_sensitive(true);
        headers.insert("x-api-key", key);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let url = format!(
            "{}/v1/messages",
            self.endpoint.base_url.trim_end_matches('/')
        );
        let limits = &self.endpoint.limits;
        let resp = http::post(NAME, &self.endpoint, &url, headers, body, stream).await?;
        if !stream {
            return Ok(sse::whole(
                parse_response(&http::json_body(NAME, resp, limits).await?)?,
                sink,
            ));
        }
        sse::read_stream::<StreamState>(NAME, resp, limits, sink).await
    }
}

/// Parses a whole recorded SSE text (for tests and replay).
pub fn parse_sse(text: &str, sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    sse::parse_text::<StreamState>(text, sink)
}
