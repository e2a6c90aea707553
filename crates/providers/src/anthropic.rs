//! Anthropic Messages API: the endpoint and the request's wire conversion; replies and streams
//! are read in `reply`, the service's own tool search (deferred tools, the server blocks sent
//! back) is `search`.

mod reply;
pub mod search;

use super::attach;
use super::{
    Endpoint, Message, ModelRequest, ModelResponse, ProviderError, TextSink, ToolChoice, http,
};
use super::{rendered, sse};
use reply::{NAME, malformed};
pub use reply::{StreamState, parse_response, parse_sse};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

/// The tool-call ids this wire takes: every call's and result's id is sent through it.
const ID: super::call_ids::IdRule = super::call_ids::IdRule::ANTHROPIC;

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
        if let Some(choice) = tool_choice(req) {
            body["tool_choice"] = choice;
        }
    }
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    if req.stream {
        body["stream"] = json!(true);
    }
    body
}

/// `tool_choice` (`auto`, `any`, `tool` with its name, `none`); one call per reply at most
/// is its `disable_parallel_tool_use` (which `none` does not take). `None`: the default asked.
fn tool_choice(req: &ModelRequest<'_>) -> Option<Value> {
    let mut choice = match &req.tool_choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::None => return Some(json!({"type": "none"})),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    };
    if req.parallel_tool_calls == Some(false) {
        choice["disable_parallel_tool_use"] = json!(true);
    } else if req.tool_choice == ToolChoice::Auto {
        return None;
    }
    Some(choice)
}

/// The tools as this wire takes them: the deferred ones flagged, with the tool search tool.
fn tool_definitions(tools: &[super::ToolDef]) -> Value {
    let defs = super::tool_definitions(tools, kiln_core::schema::Format::Anthropic);
    search::with_search(defs, tools)
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
        Message::User {
            content,
            attachments,
        } => match attachments.is_empty() {
            true => ("user", vec![json!({"type": "text", "text": content})]),
            false => ("user", attach::anthropic_blocks(content, attachments)),
        },
        Message::Assistant {
            content,
            tool_calls,
            replay,
        } => (
            "assistant",
            search::assistant_blocks(content, tool_calls, replay),
        ),
        Message::Tool { results } => {
            let blocks = results
                .iter()
                .map(|r| {
                    let mut b = json!({"type": "tool_result", "tool_use_id": ID.wire_id(&r.call_id), "content": r.content});
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
