//! OpenAI Chat Completions (and compatible servers): wire conversion, JSON replies, SSE streams.

pub use super::openai_reply::parse_response;
use super::openai_reply::{NAME, malformed, typed_reply};
pub use super::openai_stream::StreamState;
pub use super::openai_stream::parse_sse;
use super::sse;
use super::{Endpoint, Message, ModelRequest, ModelResponse, ProviderError, TextSink, http};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

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
        output: req.output.clone(),
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
            let defs = super::tool_definitions(&req.tools, kiln_core::schema::Format::OpenAi);
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
        body["tools"] = super::tool_definitions(&req.tools, kiln_core::schema::Format::OpenAi);
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
    // OpenAI's structured outputs shape only a reply without tool calls, so tools stay usable;
    // compatible servers vary in what they take, so they get the schema in the prompt only.
    if let (true, Some(schema)) = (official, &req.output) {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": schema, "strict": false}
        });
    }
    body
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
