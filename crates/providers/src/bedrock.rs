//! AWS Bedrock Converse (`POST /model/{modelId}/converse` and `/converse-stream`): the
//! endpoint, the request's wire conversion (rendered incrementally) and sending it signed
//! ([`bedrock_auth`](AwsAuth)); replies and the binary event stream are read in
//! `reply`. A typed final answer is asked for in the prompt only: Converse's
//! `outputConfig.textFormat` shapes every text block of every turn, tool-using ones too.

mod auth;
pub mod reply;

use super::attach;
use super::{
    CallArgs, Endpoint, Message, ModelRequest, ModelResponse, ProviderError, TextSink, ToolChoice,
    ToolDef, http, rendered, sse,
};
pub use auth::AwsAuth;
use reply::{NAME, parse_response, read_event_stream};
use serde_json::{Value, json};
use std::borrow::Cow;

/// The tool-call ids this wire takes: every call's and result's id is sent through it.
const ID: super::call_ids::IdRule = super::call_ids::IdRule::BEDROCK;

/// The region when neither `AWS_REGION` nor `AWS_DEFAULT_REGION` says.
pub const DEFAULT_REGION: &str = "us-east-1";
/// The variable that moves the endpoint, as the AWS SDKs read it.
pub const BASE_URL_VAR: &str = "AWS_ENDPOINT_URL_BEDROCK_RUNTIME";

/// A Bedrock Runtime endpoint serving one model.
pub struct Bedrock {
    /// Where and how to connect (`api_key` holds the secret sent with each request, if any:
    /// the session token or the bearer key; the secret key is in `auth` only).
    pub endpoint: Endpoint,
    /// The region requests are signed for.
    pub region: String,
    /// The model id (or inference profile id or ARN) in the request path.
    pub model: String,
    /// The credentials.
    pub auth: AwsAuth,
    /// The conversation as sent so far (a provider serves one run).
    pub rendered: Rendered,
}

/// The region of the standard environment: `AWS_REGION`, `AWS_DEFAULT_REGION`, else
/// [`DEFAULT_REGION`].
pub fn region_from_env() -> String {
    ["AWS_REGION", "AWS_DEFAULT_REGION"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .map(|v| v.trim().to_string())
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_REGION.to_string())
}

/// The public endpoint of Bedrock Runtime in `region`.
pub fn default_base_url(region: &str) -> String {
    format!("https://bedrock-runtime.{region}.amazonaws.com")
}

/// `id` as one path segment: every byte but the unreserved ones percent-encoded, as the SDKs
/// send a model id (`anthropic.claude-v2:1` -> `anthropic.claude-v2%3A1`; an ARN's `/` too).
pub fn encode_model_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len() + 8);
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The request body for a neutral request, rendered whole (what [`Bedrock::request_bytes`]
/// sends; the tests hold the two together).
pub fn request_body(req: &ModelRequest<'_>) -> Value {
    let req = &*offered(req);
    let mut msgs: Vec<Value> = Vec::new();
    for m in req.messages.iter() {
        let (role, blocks) = blocks(m);
        match msgs.last_mut() {
            Some(prev) if prev["role"] == role => {
                if let Some(arr) = prev["content"].as_array_mut() {
                    arr.extend(blocks);
                }
            }
            _ => msgs.push(json!({"role": role, "content": blocks})),
        }
    }
    let tools = (!req.tools.is_empty()).then(|| tool_definitions(&req.tools));
    body_around(req, msgs, tools)
}

/// The body around its messages and tool definitions (none: no tools offered).
fn body_around(req: &ModelRequest<'_>, msgs: Vec<Value>, tools: Option<Value>) -> Value {
    let mut body = json!({"messages": msgs});
    if let Some(tools) = tools {
        body["toolConfig"] = json!({"tools": tools});
        match &req.tool_choice {
            ToolChoice::Required => body["toolConfig"]["toolChoice"] = json!({"any": {}}),
            ToolChoice::Tool(name) => {
                body["toolConfig"]["toolChoice"] = json!({"tool": {"name": name}});
            }
            ToolChoice::Auto | ToolChoice::None => {}
        }
    }
    if let Some(s) = req.system.as_deref().filter(|s| !s.trim().is_empty()) {
        body["system"] = json!([{"text": s}]);
    }
    let mut config = json!({"maxTokens": req.max_tokens});
    if let Some(t) = req.temperature {
        config["temperature"] = json!(t);
    }
    body["inferenceConfig"] = config;
    body
}

/// The request as Converse can take it. `toolConfig.toolChoice` has no "none": a request for
/// no tool call offers no tools, unless the conversation holds tool calls (Converse refuses
/// them without a `toolConfig`); then the tools go as offered, the choice the model's. Converse
/// has no switch for several calls per reply either.
fn offered<'r, 'a>(req: &'r ModelRequest<'a>) -> Cow<'r, ModelRequest<'a>> {
    let calls_held = || {
        req.messages.iter().any(|m| match m {
            Message::Assistant { tool_calls, .. } => !tool_calls.is_empty(),
            Message::Tool { .. } => true,
            Message::User { .. } => false,
        })
    };
    if req.tool_choice != ToolChoice::None || req.tools.is_empty() || calls_held() {
        return Cow::Borrowed(req);
    }
    Cow::Owned(ModelRequest {
        tools: Vec::new(),
        ..req.clone()
    })
}

/// Tools as `toolConfig.tools`: `{toolSpec: {name, description, inputSchema: {json}}}`.
pub fn tool_definitions(tools: &[ToolDef]) -> Value {
    let defs = super::tool_definitions(tools, kiln_core::schema::Format::Anthropic);
    let specs = defs
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            let mut spec = json!({"name": d["name"], "inputSchema": {"json": d["input_schema"]}});
            if d["description"]
                .as_str()
                .is_some_and(|s| !s.trim().is_empty())
            {
                spec["description"] = d["description"].clone();
            }
            json!({"toolSpec": spec})
        })
        .collect();
    Value::Array(specs)
}

/// The role of a neutral message on the wire and its content blocks. Tool results are a
/// user message's `toolResult` blocks; blank text is left out (Converse refuses it).
fn blocks(m: &Message) -> (&'static str, Vec<Value>) {
    match m {
        Message::User {
            content,
            attachments,
        } => {
            let files = attach::taken(attach::Takes::BEDROCK, attachments);
            let blocks = text_block(content).into_iter();
            (
                "user",
                blocks
                    .chain(files.filter_map(attach::bedrock_block))
                    .collect(),
            )
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut blocks: Vec<Value> = text_block(content).into_iter().collect();
            for c in tool_calls {
                let input = match &c.args {
                    CallArgs::Parsed(v) if v.is_object() => Value::clone(v),
                    _ => json!({}),
                };
                blocks
                    .push(json!({"toolUse": {"toolUseId": ID.wire_id(&c.id), "name": c.name, "input": input}}));
            }
            ("assistant", blocks)
        }
        Message::Tool { results } => {
            let blocks = results
                .iter()
                .map(|r| {
                    let content = match text_block(&r.content) {
                        Some(t) => t,
                        None => json!({"text": "(no output)"}),
                    };
                    let mut b = json!({"toolUseId": ID.wire_id(&r.call_id), "content": [content]});
                    if r.is_error {
                        b["status"] = json!("error");
                    }
                    json!({"toolResult": b})
                })
                .collect();
            ("user", blocks)
        }
    }
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"text": text}))
}

/// One neutral message rendered as Converse content blocks: a run of messages of one role is
/// one wire message (the API wants the roles to alternate).
pub struct Blocks {
    role: &'static str,
    /// The blocks' JSON text, comma-joined.
    text: String,
}

/// Each message of a conversation rendered once, as its content blocks.
pub type Rendered = rendered::Rendered<Blocks>;

/// A request as the Converse wire renders it.
struct Request<'r, 'a>(&'r ModelRequest<'a>);

impl rendered::Wire for Request<'_, '_> {
    type Part = Blocks;

    fn part(&self, m: &Message) -> Blocks {
        let (role, blocks) = blocks(m);
        Blocks {
            role,
            text: rendered::joined(&blocks),
        }
    }

    fn joins(&self, prev: &Blocks, next: &Blocks) -> bool {
        prev.role == next.role
    }

    fn write(&self, out: &mut String, run: &[Blocks]) {
        let Some(first) = run.first() else {
            return;
        };
        rendered::separate(out);
        out.push_str("{\"role\":\"");
        out.push_str(first.role);
        out.push_str("\",\"content\":[");
        for b in run {
            rendered::push_item(out, &b.text);
        }
        out.push_str("]}");
    }

    fn tools(&self, tools: &[ToolDef]) -> Value {
        tool_definitions(tools)
    }

    fn frame(&self, tools: Option<Value>) -> Value {
        body_around(self.0, Vec::new(), tools)
    }
}

impl Bedrock {
    /// The request body as sent: messages rendered in earlier rounds are copied, not rendered
    /// again.
    pub fn request_bytes(&self, req: &ModelRequest<'_>) -> Vec<u8> {
        let req = &*offered(req);
        self.rendered.render(req, &Request(req))
    }

    /// Every secret of this endpoint's credentials, for redaction.
    pub fn secrets(&self) -> super::redact::Secrets {
        self.auth.secrets()
    }

    /// The URL of the model's route.
    pub fn url(&self, stream: bool) -> String {
        format!(
            "{}/model/{}/{}",
            self.endpoint.base_url.trim_end_matches('/'),
            encode_model_id(&self.model),
            if stream {
                "converse-stream"
            } else {
                "converse"
            }
        )
    }

    /// Sends a request body ([`Bedrock::request_bytes`]), signed. A stream whose first event
    /// is a throttling or unavailability exception is asked again, as a 429 or 503 would be.
    pub async fn send(
        &self,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let mut attempt = 0;
        loop {
            match self.send_once(body.clone(), stream, sink).await {
                Err((err, true)) if attempt < self.endpoint.max_retries => {
                    let wait = http::retry_delay(None, attempt);
                    tracing::warn!(
                        "{}; retrying in {:.1}s (attempt {}/{})",
                        self.secrets().error(err),
                        wait.as_secs_f64(),
                        attempt + 1,
                        self.endpoint.max_retries
                    );
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err((err, _)) => return Err(err),
                Ok(reply) => return Ok(reply),
            }
        }
    }

    /// One attempt; an error says whether asking again may help.
    async fn send_once(
        &self,
        body: bytes::Bytes,
        stream: bool,
        sink: &TextSink,
    ) -> Result<ModelResponse, (ProviderError, bool)> {
        let url = self.url(stream);
        let headers = self
            .auth
            .headers(&url, &self.region, &body)
            .map_err(|e| (e, false))?;
        let resp = http::post(NAME, &self.endpoint, &url, headers, body, stream)
            .await
            .map_err(|e| (self.refused(e), false))?;
        let limits = &self.endpoint.limits;
        if !stream {
            let body = http::json_body(NAME, resp, limits)
                .await
                .map_err(|e| (e, false))?;
            let reply = parse_response(&body).map_err(|e| (e, false))?;
            return Ok(sse::whole(reply, sink));
        }
        read_event_stream(resp, limits, sink).await
    }

    /// A refusal of the credentials, with the variables to check (never their values).
    fn refused(&self, e: ProviderError) -> ProviderError {
        match e {
            ProviderError::Http {
                provider,
                status: status @ (401 | 403),
                message,
            } => ProviderError::Http {
                provider,
                status,
                message: format!("{message} (check {})", self.auth.vars()),
            },
            e => e,
        }
    }
}

#[cfg(test)]
mod tests;
