//! Messages, tool calls and their results, usage, stop reasons, a model request and its reply.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// Arguments of a tool call as the model sent them. Parsed arguments are shared, not copied,
/// by the transcript, the call's record and its events: a waiting run holds them once.
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
    Parsed(Arc<Value>),
}

impl CallArgs {
    /// Parsed arguments.
    pub fn parsed(value: Value) -> CallArgs {
        CallArgs::Parsed(Arc::new(value))
    }

    /// The arguments as shared JSON, with invalid text kept as a string: for the call's record
    /// and events, without a copy of parsed arguments.
    pub fn shared(&self) -> Arc<Value> {
        match self {
            CallArgs::Parsed(v) => v.clone(),
            CallArgs::Invalid { raw, .. } => Arc::new(Value::String(raw.clone())),
        }
    }

    /// Parses an arguments string (OpenAI sends a JSON string; empty means `{}`).
    pub fn from_text(raw: &str) -> CallArgs {
        if raw.trim().is_empty() {
            return CallArgs::parsed(Value::Object(Default::default()));
        }
        match serde_json::from_str(raw) {
            Ok(v) => CallArgs::Parsed(Arc::new(v)),
            Err(e) => CallArgs::Invalid {
                raw: raw.to_string(),
                error: e.to_string(),
            },
        }
    }

    /// The arguments as JSON, with invalid text kept as a string.
    pub fn to_value(&self) -> Value {
        match self {
            CallArgs::Parsed(v) => Value::clone(v),
            CallArgs::Invalid { raw, .. } => Value::String(raw.clone()),
        }
    }

    /// The arguments serialized as the JSON text a wire format wants.
    pub fn to_text(&self) -> String {
        match self {
            CallArgs::Parsed(v) => serde_json::to_string(v).unwrap_or_default(),
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
        /// Images and files, after the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        attachments: Vec<super::Attachment>,
    },
    /// The model's reply: text and tool calls.
    Assistant {
        /// Text (may be empty).
        content: String,
        /// Tool calls in order.
        tool_calls: Vec<ToolCall>,
        /// What the wire that wrote this reply needs back verbatim in later requests
        /// (reasoning items, thought signatures); other wires ignore it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay: Option<Replay>,
    },
    /// Results of the previous assistant message's tool calls, in call order.
    Tool {
        /// Results.
        results: Vec<ToolResult>,
    },
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Message {
        let (content, attachments) = (text.into(), Vec::new());
        Message::User {
            content,
            attachments,
        }
    }
}

/// Opaque state of one assistant reply that only the wire which wrote it reads back: OpenAI
/// Responses' reasoning items, Gemini's thought signatures. It rides with the message through
/// the transcript, the run log and durable steps, so a later request on the same wire sends
/// it back; a request on another wire (a fallback model) renders the message without it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replay {
    /// The wire that wrote it (`openai-responses`, `gemini`, ...).
    pub wire: String,
    /// What that wire keeps, in its own shape.
    pub data: Value,
}

impl Replay {
    /// `data` if this replay was written by `wire`.
    pub fn for_wire<'a>(replay: &'a Option<Replay>, wire: &str) -> Option<&'a Value> {
        replay.as_ref().filter(|r| r.wire == wire).map(|r| &r.data)
    }
}

/// Token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens (reasoning tokens included).
    pub output_tokens: u64,
    /// Of `output_tokens`, those spent reasoning, where the wire reports them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Input and output tokens, no reasoning tokens reported.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Usage {
        Usage {
            input_tokens,
            output_tokens,
            reasoning_tokens: 0,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.reasoning_tokens += o.reasoning_tokens;
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
    /// JSON Schema of the arguments (the tool's own, shared: a request offering it copies
    /// none of it).
    pub schema: std::sync::Arc<Value>,
    /// Found by the provider's own tool search, not loaded up front (`.defer_loading`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
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

/// Which tool the model must (or must not) call in a request; each wire renders it its own way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (every wire's default: nothing is sent).
    #[default]
    Auto,
    /// No tool call: the model answers in text.
    None,
    /// At least one call of any tool offered.
    Required,
    /// A call of this tool (one of those offered).
    Tool(String),
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
    /// The JSON Schema the final answer must match (an agent's `.output`): a provider whose
    /// structured-output mode keeps tools usable sends it; kiln validates the answer anyway.
    pub output: Option<serde_json::Value>,
    /// Which tool the model must or must not call.
    pub tool_choice: ToolChoice,
    /// Whether one reply may hold several calls; `None`: the wire's default, nothing sent.
    pub parallel_tool_calls: Option<bool>,
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
    /// What the wire needs back in later requests (see [`Replay`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
    /// The model that wrote this reply, when a fallback chain chose it; `None`: the run's
    /// own provider and model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<AnsweredBy>,
}

/// The provider and model that answered one model request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnsweredBy {
    /// Provider name (`anthropic`, `openai`, ...).
    pub provider: String,
    /// Model name.
    pub model: String,
}

impl std::fmt::Display for AnsweredBy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider, self.model)
    }
}

/// Receives text as it streams in.
pub type TextSink = std::sync::Arc<dyn Fn(&str) + Send + Sync>;
