//! kiln's model providers: one module (and folder) per wire, each with its request, reply and
//! stream conversion and their tests (`anthropic`, `bedrock`, `gemini`, `ollama`, and `openai`
//! with `chat`, `responses` and `azure`, which routes the other two), request bodies rendered
//! incrementally round after round ([`rendered`]), the shared HTTP transport with retries and
//! bounded reads ([`http`]), incremental SSE ([`sse`]), key redaction ([`redact`]), and the
//! [`Provider`] an agent talks to. The neutral types they convert are kiln-core's
//! ([`kiln_core::model`], re-exported here); a model in this process is a
//! [`LocalModel`]. Providers know nothing of Rhai or of tools' code.
//!
//! May depend on: kiln-core, kiln-egress.

#![warn(missing_docs)]

pub mod anthropic;
pub mod attach;
pub mod bedrock;
pub mod call_ids;
pub mod chain;
pub mod gemini;
pub mod http;
pub mod ollama;
pub mod openai;
pub mod redact;
pub mod rendered;
pub mod sse;
pub mod thought;

pub use kiln_core::model::{
    AnsweredBy, Attachment, AttachmentError, AttachmentKind, AttachmentSource, CallArgs,
    LocalModel, LocalReply, Message, ModelRequest, ModelResponse, ProviderError, Replay,
    StopReason, TextSink, ToolCall, ToolDef, ToolResult, Usage, error, local, tool_definitions,
};

use std::time::Duration;

pub use kiln_core::model::ToolChoice;

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
    pub const DEFAULT_IDLE_TIMEOUT: Duration = kiln_core::defaults::IDLE_TIMEOUT;
    /// Default overall timeout of a streamed reply.
    pub const DEFAULT_STREAM_TIMEOUT: Duration = kiln_core::defaults::STREAM_TIMEOUT;
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
    OpenAi(openai::chat::OpenAi),
    /// Ollama's native `/api/chat`.
    Ollama(ollama::Ollama),
    /// OpenAI's Responses API.
    OpenAiResponses(openai::responses::Responses),
    /// Azure OpenAI (Chat Completions or Responses).
    Azure(openai::azure::Azure),
    /// Google Gemini's `generateContent`.
    Gemini(gemini::Gemini),
    /// AWS Bedrock Converse.
    Bedrock(bedrock::Bedrock),
    /// A model in this process: the script planner, or an embedder's ([`local::LocalModel`]).
    Local(std::sync::Arc<dyn local::LocalModel>),
    /// Several models tried in order ([`chain::Chain`]).
    Chain(chain::Chain),
}

impl Provider {
    /// The provider's name.
    pub fn name(&self) -> &'static str {
        match self {
            Provider::Anthropic(_) => "anthropic",
            Provider::OpenAi(_) => "openai",
            Provider::Ollama(_) => "ollama",
            Provider::OpenAiResponses(_) => "openai-responses",
            Provider::Azure(p) => p.name(),
            Provider::Gemini(_) => "gemini",
            Provider::Bedrock(_) => "bedrock",
            Provider::Local(m) => m.name(),
            Provider::Chain(c) => c.name(),
        }
    }

    fn endpoint(&self) -> Option<&Endpoint> {
        match self {
            Provider::Anthropic(p) => Some(&p.endpoint),
            Provider::OpenAi(p) => Some(&p.endpoint),
            Provider::Ollama(p) => Some(&p.endpoint),
            Provider::OpenAiResponses(p) => Some(&p.endpoint),
            Provider::Azure(p) => Some(&p.endpoint),
            Provider::Gemini(p) => Some(&p.endpoint),
            Provider::Bedrock(p) => Some(&p.endpoint),
            Provider::Local(_) => None,
            Provider::Chain(_) => None,
        }
    }

    /// What must never leave kiln: the key sent (and, for Bedrock, every AWS credential).
    fn secrets(&self) -> redact::Secrets {
        match self {
            Provider::Bedrock(p) => p.secrets(),
            _ => self.endpoint().map(Endpoint::secrets).unwrap_or_default(),
        }
    }

    /// Whether this provider's wire takes attachment `a` (a chain: whether every member's
    /// does), so a run is refused before anything is sent. A wire renders only what it takes.
    pub fn accepts(&self, a: &Attachment) -> Result<(), ProviderError> {
        use attach::Takes;
        let takes = match self {
            Provider::Anthropic(_) => Takes::ANTHROPIC,
            Provider::OpenAi(_) => Takes::OPENAI,
            Provider::Ollama(_) => Takes::OLLAMA,
            Provider::OpenAiResponses(_) => Takes::RESPONSES,
            Provider::Azure(p) => match p.api {
                openai::azure::Api::Chat(_) => Takes::OPENAI,
                openai::azure::Api::Responses(_) => Takes::RESPONSES,
            },
            Provider::Gemini(_) => Takes::GEMINI,
            Provider::Bedrock(_) => Takes::BEDROCK,
            Provider::Local(_) => {
                let why = "a model in this process takes text only";
                return Err(attach::refuse(self.name(), a, why));
            }
            Provider::Chain(c) => {
                return c.members().iter().try_for_each(|m| m.provider.accepts(a));
            }
        };
        match takes.refusal(a) {
            Some(why) => Err(attach::refuse(self.name(), a, &why)),
            None => Ok(()),
        }
    }

    /// Whether this provider's wire searches deferred tools itself (Anthropic's tool search
    /// tool, OpenAI Responses' `tool_search`): a request then sends every tool, the deferred
    /// ones flagged ([`ToolDef::deferred`]), and the wire's search tool; elsewhere (a chain:
    /// unless every member does) kiln offers its own `search_tools`.
    pub fn searches_tools(&self) -> bool {
        match self {
            Provider::Anthropic(_) | Provider::OpenAiResponses(_) => true,
            Provider::Chain(c) => c.members().iter().all(|m| m.provider.searches_tools()),
            _ => false,
        }
    }

    /// [`Provider::accepts`] for every attachment of `messages`.
    pub fn accepts_all(&self, messages: &[Message]) -> Result<(), ProviderError> {
        attach::attachments(messages).try_for_each(|a| self.accepts(a))
    }

    /// Renders `req` as this provider sends it. The result owns its bytes, so the step that
    /// sends it (which a durable journal may hold beyond the loop's borrows) holds nothing of
    /// the conversation.
    pub fn prepare(&self, req: &ModelRequest<'_>) -> Prepared {
        let body = match self {
            Provider::Anthropic(p) => p.request_bytes(req).into(),
            Provider::OpenAi(p) => p.request_bytes(req).into(),
            Provider::Ollama(p) => p.request_bytes(req).into(),
            Provider::OpenAiResponses(p) => p.request_bytes(req).into(),
            Provider::Azure(p) => p.request_bytes(req).into(),
            Provider::Gemini(p) => p.request_bytes(req).into(),
            Provider::Bedrock(p) => p.request_bytes(req).into(),
            Provider::Local(_) => http::json(&local::planner_input(req)),
            Provider::Chain(c) => {
                return Prepared {
                    body: Default::default(),
                    stream: req.stream,
                    model: req.model.clone(),
                    members: c.prepare(req),
                };
            }
        };
        Prepared {
            body,
            stream: req.stream,
            model: req.model.clone(),
            members: Vec::new(),
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
        let secrets = self.secrets();
        let guard = secrets.guard_sink(sink.clone());
        let sink = &guard.sink();
        let Prepared {
            body,
            stream,
            model,
            members,
        } = req;
        let result = match self {
            Provider::Anthropic(p) => p.send(body, stream, sink).await,
            Provider::OpenAi(p) => p.send(body, stream, sink).await,
            Provider::Ollama(p) => p.send(body, stream, sink).await,
            Provider::OpenAiResponses(p) => p.send(body, stream, sink).await,
            Provider::Azure(p) => p.send(body, stream, sink).await,
            Provider::Gemini(p) => p.send(&model, body, stream, sink).await,
            Provider::Bedrock(p) => p.send(body, stream, sink).await,
            Provider::Local(p) => p.send(&body, sink).await,
            Provider::Chain(c) => c.send(members, sink).await,
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
    /// The model, for wires that name it in the URL (Gemini).
    model: String,
    /// A fallback chain's: each member's own request, in order.
    members: Vec<Prepared>,
}

impl Prepared {
    /// The bytes of the request body (a fallback chain's: its largest member's), which grows
    /// with the transcript a run sends each round.
    pub fn body_bytes(&self) -> usize {
        (self.members.iter().map(Prepared::body_bytes)).fold(self.body.len(), usize::max)
    }
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
