//! Model providers. Neutral conversation types live here; each wire format has its own module
//! with its wire types and conversion (`anthropic`, `openai`, `ollama`), plus the offline
//! local models (`local::LocalModel`: the script planner, an embedder's model). Providers know nothing of Rhai or tools' code.

pub mod anthropic;
#[cfg(test)]
mod conformance;
pub mod error;
pub mod http;
pub mod local;
pub mod ollama;
pub mod openai;
mod openai_reply;
mod openai_stream;
pub mod redact;
pub mod sse;

pub use error::ProviderError;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of a tool call as the model sent them.
// Untagged: `Invalid` comes first so a saved invalid call reads back as invalid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallArgs {
    /// Text that is not valid JSON, and why.
    Invalid {
        /// What the model sent.
        raw: String,
        /// The parse error.
        error: String,
    },
    /// Parsed JSON.
    Parsed(Value),
}

impl CallArgs {
    /// Parses an arguments string (OpenAI sends a JSON string; empty means `{}`).
    pub fn from_text(raw: &str) -> CallArgs {
        if raw.trim().is_empty() {
            return CallArgs::Parsed(Value::Object(Default::default()));
        }
        match serde_json::from_str(raw) {
            Ok(v) => CallArgs::Parsed(v),
            Err(e) => CallArgs::Invalid {
                raw: raw.to_string(),
                error: e.to_string(),
            },
        }
    }

    /// The arguments as JSON, with invalid text kept as a string.
    pub fn to_value(&self) -> Value {
        match self {
            CallArgs::Parsed(v) => v.clone(),
            CallArgs::Invalid { raw, .. } => Value::String(raw.clone()),
        }
    }

    /// The arguments serialized as the JSON text a wire format wants.
    pub fn to_text(&self) -> String {
        match self {
            CallArgs::Parsed(v) => v.to_string(),
            CallArgs::Invalid { raw, .. } => raw.clone(),
        }
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id (synthesized when the provider sends none).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    pub args: CallArgs,
}

/// The result of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name (Ollama matches results by name).
    pub name: String,
    /// Result text.
    pub content: String,
    /// True for failures.
    pub is_error: bool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The person's words.
    User {
        /// Text.
        content: String,
    },
    /// The model's reply: text and tool calls.
    Assistant {
        /// Text (may be empty).
        content: String,
        /// Tool calls in order.
        tool_calls: Vec<ToolCall>,
    },
    /// Results of the previous assistant message's tool calls, in call order.
    Tool {
        /// Results.
        results: Vec<ToolResult>,
    },
}

/// Token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A natural end.
    EndTurn,
    /// It wants tool results.
    ToolUse,
    /// The token limit cut it off.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// Anything else the provider said.
    Other(String),
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub schema: Value,
}

/// The tools of a request in a wire format (the same definitions `kiln tools --format` prints).
pub fn tool_definitions(tools: &[ToolDef], format: crate::schema::Format) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| crate::schema::export(&t.name, &t.description, &t.schema, format).0)
            .collect(),
    )
}

/// One model request. It borrows the conversation: the loop hands its transcript as is, with
/// no copy per round.
#[derive(Debug, Clone)]
pub struct ModelRequest<'a> {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: std::borrow::Cow<'a, [Message]>,
    /// Tools offered.
    pub tools: Vec<ToolDef>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Output token limit.
    pub max_tokens: u32,
    /// Stream the reply.
    pub stream: bool,
    /// How many leading messages are the very messages of the previous request to this
    /// provider (the loop only appends to its transcript): a provider may reuse what it
    /// rendered of them then without comparing them again. 0 promises nothing.
    pub unchanged_prefix: usize,
}

/// One model reply in neutral form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text of the reply.
    pub text: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub stop: StopReason,
    /// Tokens used.
    pub usage: Usage,
}

/// Receives text as it streams in.
pub type TextSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Connection settings of an HTTP provider.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Base URL (`https://api.anthropic.com`, `http://127.0.0.1:11434`, ...).
    pub base_url: String,
    /// API key, if the provider needs one. Never printed.
    pub api_key: Option<String>,
    /// The environment variable the key comes from (named when the service refuses it).
    pub key_var: Option<String>,
    /// Time until a non-streamed reply is complete, or until a streamed one starts.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Sizes and stream timeouts.
    pub limits: Limits,
}

impl Endpoint {
    /// The values that must never leave kiln: the key sent to this endpoint.
    pub fn secrets(&self) -> redact::Secrets {
        redact::Secrets::new(self.api_key.iter().cloned())
    }
}

/// What one reply may cost: bytes, and time for streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one reply body (streamed or not).
    pub max_reply_bytes: usize,
    /// Bytes of one line of a stream (an SSE line, an NDJSON object).
    pub max_line_bytes: usize,
    /// Longest wait for the next chunk of a streamed reply.
    pub idle_timeout: Duration,
    /// Longest time one streamed reply may take, from its first byte to its end.
    pub stream_timeout: Duration,
}

impl Limits {
    /// Default `max_reply_bytes`: far above the longest reply a model writes (64k output
    /// tokens streamed are under 16 MiB of events), far below what hurts memory.
    pub const DEFAULT_MAX_REPLY_BYTES: usize = 32 << 20;
    /// Default `max_line_bytes`: one event carrying a whole large tool call still fits.
    pub const DEFAULT_MAX_LINE_BYTES: usize = 4 << 20;
    /// Default idle timeout between stream chunks.
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
    /// Default overall timeout of a streamed reply.
    pub const DEFAULT_STREAM_TIMEOUT: Duration = Duration::from_secs(30 * 60);
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_reply_bytes: Self::DEFAULT_MAX_REPLY_BYTES,
            max_line_bytes: Self::DEFAULT_MAX_LINE_BYTES,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            stream_timeout: Self::DEFAULT_STREAM_TIMEOUT,
        }
    }
}

/// A configured provider.
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic(anthropic::Anthropic),
    /// OpenAI Chat Completions (and compatible servers).
    OpenAi(openai::OpenAi),
    /// Ollama's native `/api/chat`.
    Ollama(ollama::Ollama),
    /// A model in this process: the script planner, or an embedder's ([`local::LocalModel`]).
    Local(std::sync::Arc<dyn local::LocalModel>),
}

impl Provider {
    /// The provider's name.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Anthropic(_) => "anthropic",
            Provider::OpenAi(_) => "openai",
            Provider::Ollama(_) => "ollama",
            Provider::Local(m) => m.name(),
        }
    }

    fn endpoint(&self) -> Option<&Endpoint> {
        match self {
            Provider::Anthropic(p) => Some(&p.endpoint),
            Provider::OpenAi(p) => Some(&p.endpoint),
            Provider::Ollama(p) => Some(&p.endpoint),
            Provider::Local(_) => None,
        }
    }

    /// Renders `req` as this provider sends it. The result owns its bytes, so the step that
    /// sends it (which a durable journal may hold beyond the loop's borrows) holds nothing of
    /// the conversation.
    pub fn prepare(&self, req: &ModelRequest<'_>) -> Prepared {
        let body = match self {
            Provider::Anthropic(_) => http::json(&anthropic::request_body(req)),
            Provider::OpenAi(p) => p.request_bytes(req).into(),
            Provider::Ollama(_) => http::json(&ollama::request_body(req)),
            Provider::Local(_) => http::json(&local::planner_input(req)),
        };
        Prepared {
            body,
            stream: req.stream,
        }
    }

    /// Sends one [`Provider::prepare`]d request and returns the reply; streamed text goes to
    /// `sink` as it arrives. Whatever the service sent back has the key redacted (it may echo
    /// it) and unique tool-call ids (the next request must answer each call by its own id).
    pub async fn send(
        &self,
        req: Prepared,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        let secrets = self.endpoint().map(Endpoint::secrets).unwrap_or_default();
        let guard = secrets.guard_sink(sink.clone());
        let sink = &guard.sink();
        let Prepared { body, stream } = req;
        let result = match self {
            Provider::Anthropic(p) => p.send(body, stream, sink).await,
            Provider::OpenAi(p) => p.send(body, stream, sink).await,
            Provider::Ollama(p) => p.send(body, stream, sink).await,
            Provider::Local(p) => p.send(&body, sink).await,
        };
        guard.flush();
        let mut reply = result.map_err(|e| secrets.error(e))?;
        secrets.reply(&mut reply);
        unique_call_ids(self.name(), &mut reply.tool_calls);
        Ok(reply)
    }
}

/// A model request rendered by [`Provider::prepare`]: the body as sent.
#[derive(Debug, Clone)]
pub struct Prepared {
    body: bytes::Bytes,
    stream: bool,
}

/// Gives every call of one reply its own id: an empty id becomes `call_N` and a repeated one
/// `ID_2`, `ID_3`, ... (never an id already in the reply). The renamed id is what the
/// transcript records and what the next request answers, so the two always agree.
pub fn unique_call_ids(provider: &str, calls: &mut [ToolCall]) {
    let mut taken: std::collections::HashSet<String> = calls.iter().map(|c| c.id.clone()).collect();
    let mut seen = std::collections::HashSet::new();
    for (i, call) in calls.iter_mut().enumerate() {
        if !call.id.is_empty() && seen.insert(call.id.clone()) {
            continue;
        }
        let base = if call.id.is_empty() {
            format!("call_{i}")
        } else {
            call.id.clone()
        };
        let mut n = 2;
        let mut id = base.clone();
        while taken.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        tracing::warn!(
            "{provider}: tool call {i} of the reply {}; it is answered as {id:?}",
            if call.id.is_empty() {
                "has no id".to_string()
            } else {
                format!("repeats the id {:?}", truncate(&call.id, 80))
            }
        );
        taken.insert(id.clone());
        seen.insert(id.clone());
        call.id = id;
    }
}

/// Shortens text for messages.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}
