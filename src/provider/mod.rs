//! Model providers. Neutral conversation types live here; each wire format has its own module
//! with its wire types and conversion (`anthropic`, `openai`, `ollama`), plus the offline
//! `script` provider whose model is a Rhai function. Providers know nothing of tools' code.

pub mod anthropic;
#[cfg(test)]
mod conformance;
pub mod error;
pub mod http;
pub mod ollama;
pub mod openai;
pub mod script;
pub mod sse;

pub use error::ProviderError;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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

/// One model request.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// Model name.
    pub model: String,
    /// System prompt.
    pub system: Option<String>,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered.
    pub tools: Vec<ToolDef>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Output token limit.
    pub max_tokens: u32,
    /// Stream the reply.
    pub stream: bool,
}

/// One model reply in neutral form.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// Request timeout.
    pub timeout: std::time::Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
}

/// A configured provider.
pub enum Provider {
    /// Anthropic Messages API.
    Anthropic(anthropic::Anthropic),
    /// OpenAI Chat Completions (and compatible servers).
    OpenAi(openai::OpenAi),
    /// Ollama's native `/api/chat`.
    Ollama(ollama::Ollama),
    /// A Rhai planner.
    Script(script::ScriptModel),
}

impl Provider {
    /// The provider's name.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Anthropic(_) => "anthropic",
            Provider::OpenAi(_) => "openai",
            Provider::Ollama(_) => "ollama",
            Provider::Script(_) => "script",
        }
    }

    /// Sends one request and returns the reply; streamed text goes to `sink` as it arrives.
    pub async fn complete(
        &self,
        req: &ModelRequest,
        sink: &TextSink,
    ) -> Result<ModelResponse, ProviderError> {
        match self {
            Provider::Anthropic(p) => p.complete(req, sink).await,
            Provider::OpenAi(p) => p.complete(req, sink).await,
            Provider::Ollama(p) => p.complete(req, sink).await,
            Provider::Script(p) => p.complete(req, sink).await,
        }
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
