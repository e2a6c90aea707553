//! OpenAI Chat Completions (and compatible servers): wire conversion, JSON replies, SSE streams.

mod part;
mod reply;
mod stream;

use crate::attach;
use crate::{Endpoint, Message, ModelRequest, ModelResponse, ProviderError, TextSink, http};
use crate::{rendered, sse};
pub use reply::parse_response;
use reply::{NAME, typed_reply};
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};
pub use stream::StreamState;
pub use stream::parse_sse;

/// The tool-call ids this wire takes: every call's and result's id is sent through it.
const ID: crate::call_ids::IdRule = crate::call_ids::IdRule::OPENAI;

/// Default base URL (the `/v1` prefix is part of it, as with every compatible server).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An OpenAI-compatible endpoint.
pub struct OpenAi {
    /// Where and how to connect.
    pub endpoint: Endpoint,
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// The request body for a neutral request, rendered whole. `official` picks
/// `max_completion_tokens`, which OpenAI wants, over `max_tokens`, which compatible servers
/// understand. (What [`OpenAi::request_bytes`] sends; the tests hold the two together.)
#[cfg(test)]
pub fn request_body(req: &ModelRequest<'_>, official: bool) -> Value {
    let mut msgs = Vec::new();
    if let Some(s) = &req.system {
        msgs.push(system_message(s));
    }
    for m in req.messages.iter() {
        wire_messages(m, &mut msgs);
    }
    let tools = (!req.tools.is_empty()).then(|| tool_definitions(&req.tools));
    body_around(req, official, msgs, tools)
}

/// Each message of a conversation rendered once, as the JSON text of its wire messages
/// (comma-joined; a tool message is one wire message per result).
pub type Rendered = rendered::Rendered<String>;

/// `request_body` as the bytes sent, the messages taken from `cache` where they were rendered
/// before (Azure's Chat Completions route sends the same bytes).
pub(crate) fn request_bytes(req: &ModelRequest<'_>, official: bool, cache: &Rendered) -> Vec<u8> {
    cache.render(req, &Request { req, official })
}

/// A request as the OpenAI wire renders it.
struct Request<'r, 'a> {
    req: &'r ModelRequest<'a>,
    official: bool,
}

impl rendered::Wire for Request<'_, '_> {
    type Part = String;

    fn part(&self, m: &Message) -> String {
        part::part(m)
    }

    fn write(&self, out: &mut String, run: &[String]) {
        rendered::write_items(out, run);
    }

    fn lead(&self) -> Option<String> {
        self.req
            .system
            .as_deref()
            .map(|s| system_message(s).to_string())
    }

    fn tools(&self, tools: &[crate::ToolDef]) -> Value {
        tool_definitions(tools)
    }

    fn frame(&self, tools: Option<Value>) -> Value {
        body_around(self.req, self.official, Vec::new(), tools)
    }
}

fn system_message(system: &str) -> Value {
    json!({"role": "system", "content": system})
}

fn tool_definitions(tools: &[crate::ToolDef]) -> Value {
    crate::tool_definitions(tools, kiln_core::schema::Format::OpenAi)
}

/// The wire messages of one neutral message (tool results are one message each).
fn wire_messages(m: &Message, msgs: &mut Vec<Value>) {
    match m {
        Message::User {
            content,
            attachments,
        } => msgs.push(match attachments.is_empty() {
            true => json!({"role": "user", "content": content}),
            false => {
                json!({"role": "user", "content": attach::openai_content(content, attachments)})
            }
        }),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut a = json!({"role": "assistant", "content": if content.is_empty() && !tool_calls.is_empty() { Value::Null } else { json!(content) }});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| json!({"id": ID.wire_id(&c.id), "type": "function", "function": {"name": c.name, "arguments": c.args.to_text()}}))
                    .collect();
                a["tool_calls"] = Value::Array(calls);
            }
            msgs.push(a);
        }
        Message::Tool { results } => {
            for r in results {
                msgs.push(json!({"role": "tool", "tool_call_id": ID.wire_id(&r.call_id), "content": r.content}));
            }
        }
    }
}

/// The body around its messages and tool definitions (none: no tools offered).
fn body_around(
    req: &ModelRequest<'_>,
    official: bool,
    msgs: Vec<Value>,
    tools: Option<Value>,
) -> Value {
    let mut body = json!({"model": req.model, "messages": msgs});
    if let Some(tools) = tools {
        body["tools"] = tools;
        choose_tools(&mut body, req);
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

/// `tool_choice` and `parallel_tool_calls`, sent with tools only (the API refuses them
/// without) and only when the request asks something else than the default.
fn choose_tools(body: &mut Value, req: &ModelRequest<'_>) {
    use crate::ToolChoice;
    let choice = match &req.tool_choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some(json!("none")),
        ToolChoice::Required => Some(json!("required")),
        ToolChoice::Tool(name) => Some(json!({"type": "function", "function": {"name": name}})),
    };
    if let Some(choice) = choice {
        body["tool_choice"] = choice;
    }
    if let Some(parallel) = req.parallel_tool_calls {
        body["parallel_tool_calls"] = json!(parallel);
    }
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
        let headers = bearer(NAME, self.endpoint.api_key.as_deref())?;
        let base = self.endpoint.base_url.trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        exchange(&self.endpoint, &url, headers, body, stream, sink).await
    }
}

/// `Authorization: Bearer KEY` (marked sensitive), or no header without a key.
pub(crate) fn bearer(
    provider: &'static str,
    key: Option<&str>,
) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        let mut v = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            ProviderError::Malformed {
                provider,
                message: "the API key holds characters a header cannot".into(),
            }
        })?;
        v.set_sensitive(true);
        headers.insert(AUTHORIZATION, v);
    }
    Ok(headers)
}

/// Posts a Chat Completions body to `url` and reads the reply, whole or streamed (OpenAI's
/// route and Azure's deployment route alike).
pub(crate) async fn exchange(
    endpoint: &Endpoint,
    url: &str,
    headers: HeaderMap,
    body: bytes::Bytes,
    stream: bool,
    sink: &TextSink,
) -> Result<ModelResponse, ProviderError> {
    let limits = &endpoint.limits;
    let resp = http::post(NAME, endpoint, url, headers, body, stream).await?;
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

#[cfg(test)]
mod tests;
