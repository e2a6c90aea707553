//! Google Gemini (`generateContent`, `streamGenerateContent?alt=sse`): the endpoint and the
//! request's wire conversion; replies and streams are read in `reply`.
//!
//! Tools go as `functionDeclarations` with `parametersJsonSchema` (the API takes JSON Schema
//! there, so no conversion to its OpenAPI subset is needed). A model turn is sent back with the
//! `thoughtSignature`s it came with (kept in the assistant message's [`Replay`]), on the same
//! parts: Gemini 3 refuses a function-calling turn without them.

mod reply;

use super::attach;
use super::{
    CallArgs, Endpoint, Message, ModelRequest, ModelResponse, ProviderError, Replay, TextSink,
    ToolChoice, ToolDef, http,
};
use super::{rendered, sse};
use reply::{MADE_UP_ID, malformed};
pub use reply::{NAME, StreamState, WIRE, parse_response, parse_sse};
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

/// The tool-call ids this wire takes: every call's and result's id is sent through it.
const ID: super::call_ids::IdRule = super::call_ids::IdRule::GEMINI;

/// Default base URL.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";
/// The API version in the path.
pub const API_VERSION: &str = "v1beta";
/// The signature Google documents for a function call Gemini did not write (a fallback model's
/// turn, a transcript from elsewhere): it tells Gemini 3 not to validate that turn.
pub const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";

/// A Gemini endpoint.
pub struct Gemini {
    /// Where and how to connect (`base_url` without the version).
    pub endpoint: Endpoint,
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// The request body for a neutral request, rendered whole (what [`Gemini::request_bytes`]
/// sends; the tests hold the two together).
pub fn request_body(req: &ModelRequest<'_>) -> Value {
    let mut contents: Vec<Value> = Vec::new();
    for m in req.messages.iter() {
        let (role, parts) = parts(m);
        match contents.last_mut() {
            Some(prev) if prev["role"] == role => {
                if let Some(all) = prev["parts"].as_array_mut() {
                    all.extend(parts);
                }
            }
            _ => contents.push(json!({"role": role, "parts": parts})),
        }
    }
    let tools = (!req.tools.is_empty()).then(|| tool_definitions(&req.tools));
    let mut body = body_around(req, tools);
    body["contents"] = Value::Array(contents);
    body
}

/// The body around its contents (empty) and tool definitions (none: no tools offered).
fn body_around(req: &ModelRequest<'_>, tools: Option<Value>) -> Value {
    let mut body = json!({"contents": []});
    if let Some(s) = &req.system {
        body["systemInstruction"] = json!({"parts": [{"text": s}]});
    }
    let has_tools = tools.is_some();
    if let Some(tools) = tools {
        body["tools"] = tools;
        body["toolConfig"] = json!({"functionCallingConfig": calling_config(&req.tool_choice)});
    }
    let mut config = json!({"maxOutputTokens": req.max_tokens});
    if let Some(t) = req.temperature {
        config["temperature"] = json!(t);
    }
    // Gemini 2.x refuses a JSON response type next to function declarations; Gemini 3 takes
    // both. kiln asks for the schema in the prompt too and validates the answer either way.
    if let Some(schema) = &req.output
        && (!has_tools || req.model.contains("gemini-3"))
    {
        config["responseMimeType"] = json!("application/json");
        config["responseJsonSchema"] = schema.clone();
    }
    body["generationConfig"] = config;
    body
}

/// `toolConfig.functionCallingConfig`: `AUTO`, `NONE`, or `ANY` (with the one function
/// allowed, when one is named). Gemini has no switch for several calls per reply.
fn calling_config(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    }
}

/// `tools: [{functionDeclarations: [...]}]`, each with its JSON Schema as `parametersJsonSchema`.
pub fn tool_definitions(tools: &[ToolDef]) -> Value {
    let decls: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.schema}))
        .collect();
    json!([{ "functionDeclarations": decls }])
}

/// The role of a neutral message on the wire and its parts.
fn parts(m: &Message) -> (&'static str, Vec<Value>) {
    match m {
        Message::User {
            content,
            attachments,
        } => {
            let files = attach::taken(attach::Takes::GEMINI, attachments).map(attach::gemini_part);
            let text =
                (attachments.is_empty() || !content.is_empty()).then(|| json!({"text": content}));
            ("user", text.into_iter().chain(files).collect())
        }
        Message::Assistant {
            content,
            tool_calls,
            replay,
        } => ("model", model_parts(content, tool_calls, replay)),
        Message::Tool { results } => {
            let parts = results
                .iter()
                .map(|r| {
                    let mut f = json!({"name": r.name, "response": response_object(&r.content, r.is_error)});
                    if !r.call_id.starts_with(MADE_UP_ID) {
                        f["id"] = json!(ID.wire_id(&r.call_id));
                    }
                    json!({ "functionResponse": f })
                })
                .collect();
            ("user", parts)
        }
    }
}

/// A tool's result as the `response` object Gemini takes: a JSON object as is, anything else
/// as `{"result": ...}`, a failure as `{"error": ...}`.
pub fn response_object(content: &str, is_error: bool) -> Value {
    let value = serde_json::from_str::<Value>(content).unwrap_or_else(|_| json!(content));
    match (is_error, value) {
        (true, v) => json!({ "error": v }),
        (false, v @ Value::Object(_)) => v,
        (false, v) => json!({ "result": v }),
    }
}

/// A model turn's parts: its thoughts (as Gemini sent them), its text and its calls, each with
/// the signature it came with. A turn Gemini did not write gets the documented skip signature
/// on its first call.
fn model_parts(content: &str, calls: &[super::ToolCall], replay: &Option<Replay>) -> Vec<Value> {
    let kept = Replay::for_wire(replay, WIRE);
    let mut parts: Vec<Value> = kept
        .and_then(|k| k["thoughts"].as_array())
        .cloned()
        .unwrap_or_default();
    let text_signature = kept.and_then(|k| k["text"].as_str());
    if !content.is_empty() || text_signature.is_some() || calls.is_empty() {
        let mut p = json!({ "text": content });
        if let Some(sig) = text_signature {
            p["thoughtSignature"] = json!(sig);
        }
        parts.push(p);
    }
    let signatures = kept.and_then(|k| k["calls"].as_array());
    for (i, c) in calls.iter().enumerate() {
        let args = match &c.args {
            CallArgs::Parsed(v) if v.is_object() => Value::clone(v),
            _ => json!({}),
        };
        let mut f = json!({"name": c.name, "args": args});
        if !c.id.starts_with(MADE_UP_ID) {
            f["id"] = json!(ID.wire_id(&c.id));
        }
        let mut p = json!({ "functionCall": f });
        let sig = match kept {
            Some(_) => signatures.and_then(|s| s.get(i)).and_then(Value::as_str),
            None => (i == 0).then_some(SKIP_SIGNATURE),
        };
        if let Some(sig) = sig {
            p["thoughtSignature"] = json!(sig);
        }
        parts.push(p);
    }
    parts
}

/// One neutral message rendered as Gemini parts: the wire merges a run of messages of one role
/// into one `Content`, so a message is its parts, not a wire message.
pub struct Parts {
    role: &'static str,
    /// The parts' JSON text, comma-joined.
    text: String,
}

/// Each message of a conversation rendered once, as its parts.
pub type Rendered = rendered::Rendered<Parts>;

/// A request as the Gemini wire renders it.
struct Request<'r, 'a>(&'r ModelRequest<'a>);

impl rendered::Wire for Request<'_, '_> {
    type Part = Parts;

    fn part(&self, m: &Message) -> Parts {
        let (role, parts) = parts(m);
        Parts {
            role,
            text: rendered::joined(&parts),
        }
    }

    fn joins(&self, prev: &Parts, next: &Parts) -> bool {
        prev.role == next.role
    }

    fn write(&self, out: &mut String, run: &[Parts]) {
        let Some(first) = run.first() else {
            return;
        };
        rendered::separate(out);
        out.push_str("{\"role\":\"");
        out.push_str(first.role);
        out.push_str("\",\"parts\":[");
        for p in run {
            rendered::push_item(out, &p.text);
        }
        out.push_str("]}");
    }

    fn tools(&self, tools: &[ToolDef]) -> Value {
        tool_definitions(tools)
    }

    fn frame(&self, tools: Option<Value>) -> Value {
        body_around(self.0, tools)
    }

    fn list_key(&self) -> &'static str {
        "contents"
    }
}

impl Gemini {
    /// The request body as sent: messages rendered in earlier rounds are copied, not rendered
    /// again.
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        self.rendered.render(req, &Request(req))
    }

    /// The URL of `model`'s `generateContent` (or, streamed, `streamGenerateContent?alt=sse`).
    pub fn url(&self, model: &str, stream: bool) -> String {
        let base = self.endpoint.base_url.trim_end_matches('/');
        let model = model.strip_prefix("models/").unwrap_or(model);
        if stream {
            format!("{base}/{API_VERSION}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/{API_VERSION}/models/{model}:generateContent")
        }
    }

    /// Sends a request body ([`Gemini::request_bytes`]) for `model`.
    pub async fn send(
        &self,
        model: &str,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.endpoint.api_key {
            let mut key = HeaderValue::from_str(key)
                .map_err(|_| malformed("the API key holds characters a header cannot"))?;
            key.set_sensitive(true);
            headers.insert("x-goog-api-key", key);
        }
        let url = self.url(model, stream);
        let limits = &self.endpoint.limits;
        let resp = http::post(NAME, &self.endpoint, &url, headers, body, stream).await?;
        if !stream {
            let body = http::whole_body(NAME, resp, limits).await?;
            return Ok(sse::whole(parse_response(&body.json()?)?, sink));
        }
        sse::read_stream::<StreamState>(NAME, resp, limits, sink).await
    }
}

#[cfg(test)]
mod tests;
