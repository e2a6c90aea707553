//! OpenAI's Responses API (`POST /v1/responses`): the request rendered as `input` items, whole
//! replies ([`parse_response`]) and SSE streams ([`StreamState`]). Nothing is kept on the
//! server (`store: false`): each round sends the conversation, with the earlier rounds' output
//! items (reasoning items and their `encrypted_content`) carried in each assistant message's
//! [`Replay`] and sent back where they were, so reasoning carries across rounds.

mod reply;
mod stream;

use crate::attach;
use crate::{Endpoint, Message, ModelRequest, ModelResponse, ProviderError, TextSink, ToolCall};
use crate::{Replay, ToolChoice, http, rendered, sse};
pub use reply::{NAME, WIRE, parse_response};
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
pub use stream::{StreamState, parse_sse};

/// The tool-call ids this wire takes: every call's and result's id is sent through it.
const ID: crate::call_ids::IdRule = crate::call_ids::IdRule::RESPONSES;

/// Default base URL (with `/v1`, like the Chat Completions provider's).
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// An endpoint of the Responses API.
pub struct Responses {
    /// Where and how to connect.
    pub endpoint: Endpoint,
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// Each message of a conversation rendered once, as the JSON text of its input items
/// (comma-joined).
pub type Rendered = rendered::Rendered<String>;

/// The request body for a neutral request, rendered whole (what [`Responses::request_bytes`]
/// sends; the tests hold the two together).
pub fn request_body(req: &ModelRequest<'_>) -> Value {
    let mut items = Vec::new();
    for m in req.messages.iter() {
        input_items(m, &mut items);
    }
    let mut body = frame(
        req,
        (!req.tools.is_empty()).then(|| tool_definitions(&req.tools)),
    );
    body["input"] = Value::Array(items);
    body
}

/// `request_body` as the bytes sent, the messages taken from `cache` where they were rendered
/// before (Azure's Responses route sends the same bytes).
pub(crate) fn request_bytes(req: &ModelRequest<'_>, cache: &Rendered) -> Vec<u8> {
    cache.render(req, &Request { req })
}

/// A request as the Responses wire renders it.
struct Request<'r, 'a> {
    req: &'r ModelRequest<'a>,
}

impl rendered::Wire for Request<'_, '_> {
    type Part = String;

    fn part(&self, m: &Message) -> String {
        let mut items = Vec::new();
        input_items(m, &mut items);
        rendered::joined(&items)
    }

    fn write(&self, out: &mut String, run: &[String]) {
        rendered::write_items(out, run);
    }

    fn tools(&self, tools: &[crate::ToolDef]) -> Value {
        tool_definitions(tools)
    }

    fn frame(&self, tools: Option<Value>) -> Value {
        frame(self.req, tools)
    }

    fn list_key(&self) -> &'static str {
        "input"
    }
}

/// Function tools as the Responses API takes them: flat, not strict (kiln validates the
/// arguments itself, and strict mode would reject schemas it cannot enforce). Deferred tools
/// ([`crate::ToolDef::deferred`]) go with `defer_loading: true` and the hosted `tool_search`
/// tool after them: the service searches and loads them itself (its `tool_search_call` and
/// `tool_search_output` items come back in the reply's [`Replay`], sent back in later rounds).
fn tool_definitions(tools: &[crate::ToolDef]) -> Value {
    let mut defs: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut d = json!({"type": "function", "name": t.name, "description": t.description,
                   "parameters": t.schema, "strict": false});
            if t.deferred {
                d["defer_loading"] = json!(true);
            }
            d
        })
        .collect();
    if tools.iter().any(|t| t.deferred) {
        defs.push(json!({"type": TOOL_SEARCH}));
    }
    Value::Array(defs)
}

/// The hosted tool search tool's type.
pub const TOOL_SEARCH: &str = "tool_search";

/// The body around an empty `input` list, with `tools` as the definitions (none: no tools
/// offered). `model` and `input` come first (the rendered list is spliced in at `input`).
fn frame(req: &ModelRequest<'_>, tools: Option<Value>) -> Value {
    let mut body = json!({"model": req.model, "input": []});
    if let Some(system) = &req.system {
        body["instructions"] = json!(system);
    }
    if let Some(tools) = tools {
        body["tools"] = tools;
        choose_tools(&mut body, req);
    }
    body["max_output_tokens"] = json!(req.max_tokens);
    if let Some(t) = req.temperature {
        body["temperature"] = json!(t);
    }
    body["store"] = json!(false);
    body["include"] = json!(["reasoning.encrypted_content"]);
    if req.stream {
        body["stream"] = json!(true);
    }
    // Like Chat Completions' response_format: it shapes a reply without tool calls only.
    if let Some(schema) = &req.output {
        body["text"] = json!({"format": {
            "type": "json_schema", "name": "final_answer", "schema": schema, "strict": false
        }});
    }
    body
}

/// `tool_choice` (flat, unlike Chat Completions' named choice) and `parallel_tool_calls`,
/// sent with tools only and only when the request asks something else than the default.
fn choose_tools(body: &mut Value, req: &ModelRequest<'_>) {
    let choice = match &req.tool_choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some(json!("none")),
        ToolChoice::Required => Some(json!("required")),
        ToolChoice::Tool(name) => Some(json!({"type": "function", "name": name})),
    };
    if let Some(choice) = choice {
        body["tool_choice"] = choice;
    }
    if let Some(parallel) = req.parallel_tool_calls {
        body["parallel_tool_calls"] = json!(parallel);
    }
}

/// The input items of one neutral message.
fn input_items(m: &Message, items: &mut Vec<Value>) {
    match m {
        Message::User {
            content,
            attachments,
        } => items.push(match attachments.is_empty() {
            true => json!({"role": "user", "content": content}),
            false => {
                json!({"role": "user", "content": attach::responses_content(content, attachments)})
            }
        }),
        Message::Assistant {
            content,
            tool_calls,
            replay,
        } => assistant_items(content, tool_calls, replay, items),
        Message::Tool { results } => {
            for r in results {
                items.push(json!({"type": "function_call_output", "call_id": ID.wire_id(&r.call_id), "output": r.content}));
            }
        }
    }
}

/// An assistant turn: its output items as the API sent them (this wire's [`Replay`]: reasoning
/// items with their `encrypted_content`, the message and function calls with their ids, in
/// order), each call as the transcript has it; a call or text the replay lacks (a turn from
/// another wire, an id renamed) is added after.
fn assistant_items(
    content: &str,
    calls: &[ToolCall],
    replay: &Option<Replay>,
    items: &mut Vec<Value>,
) {
    let replayed = Replay::for_wire(replay, WIRE).and_then(Value::as_array);
    let mut sent = vec![false; calls.len()];
    let mut text_sent = false;
    for item in replayed.into_iter().flatten() {
        match item["type"].as_str() {
            Some("function_call") => {
                let Some(i) = calls.iter().position(|c| item["call_id"] == c.id.as_str()) else {
                    continue;
                };
                let mut item = item.clone();
                item["call_id"] = json!(ID.wire_id(&calls[i].id));
                item["name"] = json!(calls[i].name);
                item["arguments"] = json!(calls[i].args.to_text());
                sent[i] = true;
                items.push(item);
            }
            Some("message") => {
                text_sent = true;
                items.push(item.clone());
            }
            _ => items.push(item.clone()),
        }
    }
    if !text_sent && !content.is_empty() {
        items.push(json!({"role": "assistant", "content": content}));
    }
    for (c, _) in calls.iter().zip(sent).filter(|(_, sent)| !sent) {
        items.push(
            json!({"type": "function_call", "call_id": ID.wire_id(&c.id), "name": c.name,
                          "arguments": c.args.to_text()}),
        );
    }
}

impl Responses {
    /// The request body as sent: messages rendered in earlier rounds are copied, not rendered
    /// again.
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        request_bytes(req, &self.rendered)
    }

    /// Sends a request body ([`Responses::request_bytes`]).
    pub async fn send(
        &self,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let headers = crate::openai::chat::bearer(NAME, self.endpoint.api_key.as_deref())?;
        let base = self.endpoint.base_url.trim_end_matches('/');
        let url = format!("{base}/responses");
        exchange(&self.endpoint, &url, headers, body, stream, sink).await
    }
}

/// Posts a Responses body to `url` and reads the reply, whole or streamed (OpenAI's route and
/// Azure's alike).
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
        return Ok(sse::whole(parse_response(&body.json()?)?, sink));
    }
    sse::read_stream::<StreamState>(NAME, resp, limits, sink).await
}

#[cfg(test)]
mod tests;
