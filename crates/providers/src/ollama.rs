//! Ollama's native `/api/chat`: arguments are objects, calls may lack ids (results are matched
//! by order and `tool_name`), streams are NDJSON.

use super::attach;
use super::error::quote;
use super::sse::{LineBuffer, LineEnds};
use super::{
    CallArgs, Endpoint, Message, ModelRequest, ModelResponse, ProviderError, StopReason, TextSink,
    ToolCall, ToolChoice, Usage, http, rendered,
};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::borrow::Cow;

/// The tool-call ids this wire takes: every call's and result's id is sent through it.
const ID: super::call_ids::IdRule = super::call_ids::IdRule::OLLAMA;

const NAME: &str = "ollama";
/// Default base URL.
pub const DEFAULT_BASE_URL: &str = "http://127.0.0.1:11434";
/// Prefix of ids kiln made up for calls that came without one.
const SYNTHETIC_ID: &str = "ollama_call_";

/// An Ollama server.
pub struct Ollama {
    /// Where and how to connect.
    pub endpoint: Endpoint,
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// `OLLAMA_HOST` may omit the scheme (`127.0.0.1:11434`); make it a URL.
pub fn normalize_host(host: &str) -> String {
    let h = host.trim().trim_end_matches('/');
    if h.starts_with("http://") || h.starts_with("https://") {
        h.to_string()
    } else {
        format!("http://{h}")
    }
}

/// The request body for a neutral request, rendered whole (what [`Ollama::request_bytes`]
/// sends; the tests hold the two together).
pub fn request_body(req: &ModelRequest<'_>) -> Value {
    let req = &*offered(req);
    let mut msgs = Vec::new();
    if let Some(s) = &req.system {
        msgs.push(system_message(s));
    }
    for m in req.messages.iter() {
        wire_messages(m, &mut msgs);
    }
    let tools = (!req.tools.is_empty()).then(|| tool_definitions(&req.tools));
    body_around(req, msgs, tools)
}

fn system_message(system: &str) -> Value {
    json!({"role": "system", "content": system})
}

fn tool_definitions(tools: &[super::ToolDef]) -> Value {
    super::tool_definitions(tools, kiln_core::schema::Format::Ollama)
}

/// The wire messages of one neutral message (tool results are one message each).
fn wire_messages(m: &Message, msgs: &mut Vec<Value>) {
    match m {
        Message::User {
            content,
            attachments,
        } => {
            let mut m = json!({"role": "user", "content": content});
            let images: Vec<&str> = attach::taken(attach::Takes::OLLAMA, attachments)
                .filter_map(attach::ollama_image)
                .collect();
            if !images.is_empty() {
                m["images"] = json!(images);
            }
            msgs.push(m);
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut a = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        let args = match &c.args {
                            CallArgs::Parsed(v) if v.is_object() => Value::clone(v),
                            _ => json!({}),
                        };
                        let mut call = json!({"function": {"name": c.name, "arguments": args}});
                        if !c.id.starts_with(SYNTHETIC_ID) {
                            call["id"] = json!(ID.wire_id(&c.id));
                        }
                        call
                    })
                    .collect();
                a["tool_calls"] = Value::Array(calls);
            }
            msgs.push(a);
        }
        Message::Tool { results } => {
            for r in results {
                let mut t = json!({"role": "tool", "tool_name": r.name, "content": r.content});
                if !r.call_id.starts_with(SYNTHETIC_ID) {
                    t["tool_call_id"] = json!(ID.wire_id(&r.call_id));
                }
                msgs.push(t);
            }
        }
    }
}

/// The body around its messages and tool definitions (none: no tools offered).
fn body_around(req: &ModelRequest<'_>, msgs: Vec<Value>, tools: Option<Value>) -> Value {
    let mut body = json!({"model": req.model, "messages": msgs, "stream": req.stream});
    if let Some(tools) = tools {
        body["tools"] = tools;
    }
    let mut options = json!({"num_predict": req.max_tokens});
    if let Some(t) = req.temperature {
        options["temperature"] = json!(t);
    }
    body["options"] = options;
    body
}

/// Each message of a conversation rendered once, as the JSON text of its wire messages
/// (comma-joined; a tool message is one wire message per result).
pub type Rendered = rendered::Rendered<String>;

/// [`request_body`] as the bytes sent, the messages taken from `cache` where they were
/// rendered before.
fn request_bytes(req: &ModelRequest<'_>, cache: &Rendered) -> Vec<u8> {
    let req = &*offered(req);
    cache.render(req, &Request(req))
}

/// The request as `/api/chat` can take it: it has no `tool_choice`, so the choice is made in
/// the tools offered, as best it can be. No tool call: no tools offered. One tool named: only
/// that tool offered (none if it is not among them). Some call required: the tools as
/// offered, as with the default; the model may still answer without a call, which kiln then
/// takes as the answer.
fn offered<'r, 'a>(req: &'r ModelRequest<'a>) -> Cow<'r, ModelRequest<'a>> {
    let tools = match &req.tool_choice {
        ToolChoice::Auto | ToolChoice::Required => return Cow::Borrowed(req),
        ToolChoice::None => Vec::new(),
        ToolChoice::Tool(name) => (req.tools.iter())
            .filter(|t| &t.name == name)
            .cloned()
            .collect(),
    };
    Cow::Owned(ModelRequest {
        tools,
        ..req.clone()
    })
}

/// A request as the Ollama wire renders it.
struct Request<'r, 'a>(&'r ModelRequest<'a>);

impl rendered::Wire for Request<'_, '_> {
    type Part = String;

    fn part(&self, m: &Message) -> String {
        let mut wire = Vec::new();
        wire_messages(m, &mut wire);
        rendered::joined(&wire)
    }

    fn write(&self, out: &mut String, run: &[String]) {
        rendered::write_items(out, run);
    }

    fn lead(&self) -> Option<String> {
        self.0
            .system
            .as_deref()
            .map(|s| system_message(s).to_string())
    }

    fn tools(&self, tools: &[super::ToolDef]) -> Value {
        tool_definitions(tools)
    }

    fn frame(&self, tools: Option<Value>) -> Value {
        body_around(self.0, Vec::new(), tools)
    }
}

fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

/// Accumulates replies: one object, or NDJSON chunks.
#[derive(Default)]
pub struct ChatState {
    text: String,
    calls: Vec<ToolCall>,
    done_reason: Option<String>,
    usage: Usage,
    done: bool,
}

impl ChatState {
    /// Applies one JSON object (a whole reply or a stream chunk).
    pub fn apply(&mut self, line: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let line = line.trim();
        if line.is_empty() {
            return Ok(());
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| malformed(format!("bad reply line ({e}): {}", quote(line))))?;
        self.apply_value(&v, sink)
    }

    /// Applies one reply object, already parsed.
    pub fn apply_value(&mut self, v: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        if let Some(e) = v.get("error") {
            return Err(ProviderError::Stream {
                provider: NAME,
                message: quote(&e.as_str().map_or_else(|| e.to_string(), str::to_string)),
            });
        }
        let msg = &v["message"];
        if let Some(t) = msg["content"].as_str()
            && !t.is_empty()
        {
            self.text.push_str(t);
            sink(t);
        }
        for c in msg["tool_calls"].as_array().into_iter().flatten() {
            let f = &c["function"];
            let name = f["name"]
                .as_str()
                .ok_or_else(|| malformed("tool call without a function name"))?;
            let args = match &f["arguments"] {
                Value::String(s) => CallArgs::from_text(s),
                Value::Null => CallArgs::parsed(json!({})),
                other => CallArgs::parsed(other.clone()),
            };
            let id = c["id"].as_str().map_or_else(
                || format!("{SYNTHETIC_ID}{}", self.calls.len()),
                str::to_string,
            );
            self.calls.push(ToolCall {
                id,
                name: name.to_string(),
                args,
            });
        }
        if v["done"].as_bool() == Some(true) {
            self.done = true;
            self.done_reason = v["done_reason"].as_str().map(str::to_string);
            self.usage = Usage {
                reasoning_tokens: 0,
                input_tokens: v["prompt_eval_count"].as_u64().unwrap_or(0),
                output_tokens: v["eval_count"].as_u64().unwrap_or(0),
            };
        }
        Ok(())
    }

    /// The reply once complete.
    pub fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.done {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before done: true".into(),
            });
        }
        let stop = match self.done_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            Some("stop") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_string()),
        };
        if stop == StopReason::MaxTokens
            && let Some(last) = self.calls.last()
        {
            return Err(ProviderError::Truncated {
                provider: NAME,
                tool: quote(&last.name),
            });
        }
        Ok(ModelResponse {
            replay: None,
            answered_by: None,
            text: self.text,
            tool_calls: self.calls,
            stop,
            usage: self.usage,
        })
    }
}

impl Ollama {
    /// The request body as sent: messages rendered in earlier rounds are copied, not rendered
    /// again.
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        request_bytes(req, &self.rendered)
    }

    /// Sends a request body ([`Ollama::request_bytes`]).
    pub async fn send(
        &self,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let url = format!("{}/api/chat", self.endpoint.base_url.trim_end_matches('/'));
        let limits = &self.endpoint.limits;
        let resp = http::post(NAME, &self.endpoint, &url, HeaderMap::new(), body, stream).await?;
        let mut state = ChatState::default();
        if !stream {
            let v = http::json_body(NAME, resp, limits).await?;
            state.apply_value(&v, sink)?;
            return state.finish();
        }
        let resp = http::expect_content_type(
            NAME,
            resp,
            &["application/x-ndjson", "application/json"],
            limits,
        )
        .await?;
        let mut lines = LineBuffer::new(LineEnds::Lf, limits.max_line_bytes);
        http::for_each_chunk(NAME, resp, limits, |bytes| {
            for line in lines.push(bytes).map_err(|e| e.into_error(NAME))? {
                state.apply(&line, sink)?;
            }
            Ok(())
        })
        .await?;
        if let Some(rest) = lines.rest() {
            state.apply(&rest, sink)?;
        }
        state.finish()
    }
}
