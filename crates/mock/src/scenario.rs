//! Scenario files for `kiln mock`: a list of turns, each a reply or a fault.

use serde::Deserialize;
use serde_json::Value;

/// A scenario: the turns served in order (across endpoints), optionally looping.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Replies and faults, in order.
    pub turns: Vec<Turn>,
    /// Start again from the first turn when the last was served.
    #[serde(default, rename = "loop")]
    pub repeat: bool,
    /// Require credentials as the real services do (default true).
    #[serde(default = "yes")]
    pub require_auth: bool,
    /// Give Ollama tool calls ids (newer servers do; older ones do not).
    #[serde(default)]
    pub ollama_ids: bool,
    /// Pause between streamed chunks, in milliseconds.
    #[serde(default)]
    pub chunk_delay_ms: u64,
    /// Pick each reply by the conversation's round (the assistant messages in the request)
    /// instead of one shared cursor, so concurrent conversations each get the whole scenario.
    #[serde(default)]
    pub by_round: bool,
    /// Report input tokens counted from each request ([`crate::render::count`]: the prompt
    /// the model reads, deferred tools not yet found left out, at four bytes a token) instead
    /// of the turn's; the recorded request holds the count too (`input_tokens`).
    #[serde(default)]
    pub count_usage: bool,
    /// Keep every request for `GET /_kiln/requests` (default true); a long soak turns it off so
    /// the mock's memory stays flat.
    #[serde(default = "yes")]
    pub record: bool,
    /// The credentials Bedrock requests must be signed with (`kiln mock --aws-*`, never in
    /// the file): none accepts any.
    #[serde(skip)]
    pub aws: Option<AwsKeys>,
}

fn yes() -> bool {
    true
}

/// The credentials the mock accepts on Bedrock's routes (a test key pair; never real ones),
/// checked by [`crate::sigv4`].
#[derive(Clone, Default)]
pub struct AwsKeys {
    /// The access key id.
    pub access_key_id: String,
    /// The secret access key the signatures must be made with.
    pub secret_access_key: String,
    /// The session token requests must carry, if any.
    pub session_token: Option<String>,
    /// The Bedrock API key (`Authorization: Bearer`) accepted, if any.
    pub bearer: Option<String>,
}

impl std::fmt::Debug for AwsKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AwsKeys(..)")
    }
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            turns: Vec::new(),
            repeat: false,
            require_auth: true,
            ollama_ids: false,
            chunk_delay_ms: 0,
            by_round: false,
            count_usage: false,
            record: true,
            aws: None,
        }
    }
}

/// One turn.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// Reply text.
    #[serde(default)]
    pub text: Option<String>,
    /// Tool calls to request.
    #[serde(default)]
    pub tool_calls: Vec<MockCall>,
    /// The model's reasoning before its answer (Responses: a reasoning item, with an
    /// `encrypted_content` when asked for).
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The service's own tool search first (Anthropic, OpenAI Responses): the model searches
    /// the request's deferred tools for these words, and the reply holds the search's blocks
    /// or items before its calls. See [`crate::offered::search`].
    #[serde(default)]
    pub tool_search: Option<String>,
    /// Anthropic: the reply stops with `pause_turn` (a long server-tool turn the client sends
    /// back as it is for the model to go on).
    #[serde(default)]
    pub pause: bool,
    /// What `tool_search` found in the request being answered (the server fills it).
    #[serde(skip)]
    pub searched: Option<Searched>,
    /// A program for a code-mode agent: a call of `run_code` with it (after `tool_calls`).
    #[serde(default)]
    pub code: Option<String>,
    /// Answer with an HTTP error instead.
    #[serde(default)]
    pub fault: Option<Fault>,
    /// Wait this long before answering.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Serve this turn only to a request that offers a tool of this name (on any wire); a
    /// turn without it fits every request. See [`crate::offered`].
    #[serde(default)]
    pub offered: Option<String>,
    /// Serve this turn only to a request for this model, named as the request names it (its
    /// body's `model`, or the model in its URL on Gemini, Bedrock and Azure). See
    /// [`crate::fits`].
    #[serde(default)]
    pub model: Option<String>,
    /// Serve this turn only when the conversation's first user message contains this text
    /// (case-sensitive). See [`crate::fits`].
    #[serde(default)]
    pub user: Option<String>,
    /// Serve this turn only when the request's system prompt contains this text
    /// (case-sensitive): how a scenario answers one version of an agent's instructions
    /// differently from another. See [`crate::fits`].
    #[serde(default)]
    pub system: Option<String>,
    /// Answer 200 with a body that is not valid JSON / SSE.
    #[serde(default)]
    pub malformed: bool,
    /// The token limit cuts the last tool call (stop reason max_tokens / length).
    #[serde(default)]
    pub truncate: bool,
    /// The connection drops in the middle of the streamed reply.
    #[serde(default)]
    pub cut: bool,
    /// The first request that reaches this turn gets no reply: after the turn's `delay_ms`
    /// the whole connection it came on is closed (on HTTP/2 every stream on it fails, as when
    /// a provider's connection drops). The turn is then spent, for every client: each later
    /// request that reaches it gets its reply (`text`, `tool_calls`, ...). The request that was
    /// cut off does not move its client on, so a retry reaches this turn again.
    #[serde(default)]
    pub reset_connection: bool,
    /// An error event inside a 200 stream (or error body of a 200 reply).
    #[serde(default)]
    pub stream_error: Option<String>,
    /// Token usage to report.
    #[serde(default)]
    pub usage: Option<MockUsage>,
    /// The messages this turn's request added since the previous reply, as recorded
    /// (`kiln logs --scenario`); strict replays compare against them, the mock ignores them.
    #[serde(default)]
    pub expect: Option<Value>,
    /// The calls the programs this turn asked for made (code mode), as recorded:
    /// `[{"tool", "args"}]` in order; strict replays compare against them, the mock ignores them.
    #[serde(default)]
    pub expect_calls: Option<Value>,
}

impl Turn {
    /// The tool calls the turn requests, `code` as a call of `run_code`.
    pub fn calls(&self) -> std::borrow::Cow<'_, [MockCall]> {
        match &self.code {
            None => std::borrow::Cow::Borrowed(&self.tool_calls),
            Some(code) => {
                let mut calls = self.tool_calls.clone();
                calls.push(MockCall {
                    name: "run_code".into(),
                    args: serde_json::json!({ "code": code }),
                    raw_arguments: None,
                    id: None,
                });
                std::borrow::Cow::Owned(calls)
            }
        }
    }
}

/// What a turn's `tool_search` found in the request it answers; the server fills it before
/// rendering ([`crate::offered::search`]).
#[derive(Debug, Clone, Default)]
pub struct Searched {
    /// The search tool's name (Anthropic: the one the request offers).
    pub tool: String,
    /// The search's input as the model writes it (`{"query"}`, `{"pattern"}`, `{"paths"}`).
    pub input: Value,
    /// The deferred tools found, as the request defines them.
    pub found: Vec<Value>,
}

impl Searched {
    /// The names of the tools found.
    pub fn names(&self) -> Vec<&str> {
        (self.found.iter())
            .filter_map(|t| t["name"].as_str())
            .collect()
    }
}

/// A tool call the mock model requests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockCall {
    /// Tool name.
    pub name: String,
    /// Arguments.
    #[serde(default)]
    pub args: Value,
    /// Arguments text sent verbatim (OpenAI), e.g. invalid JSON.
    #[serde(default)]
    pub raw_arguments: Option<String>,
    /// The call's id as the service sends it, however odd (Anthropic and OpenAI Chat
    /// Completions); by default the mock's own (`toolu_mock_N_I`, `call_mock_N_I`).
    #[serde(default)]
    pub id: Option<String>,
}

impl MockCall {
    /// The arguments as the JSON text OpenAI sends.
    pub fn arguments_text(&self) -> String {
        self.raw_arguments.clone().unwrap_or_else(|| {
            if self.args.is_null() {
                "{}".into()
            } else {
                self.args.to_string()
            }
        })
    }

    /// The arguments as an object (Anthropic, Ollama).
    pub fn arguments_object(&self) -> Value {
        match &self.args {
            Value::Null => serde_json::json!({}),
            v => v.clone(),
        }
    }
}

/// An HTTP error reply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Status code.
    pub status: u16,
    /// `retry-after` seconds.
    #[serde(default)]
    pub retry_after: Option<f64>,
    /// `retry-after-ms`.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    /// `x-should-retry`.
    #[serde(default)]
    pub should_retry: Option<bool>,
    /// Error message.
    #[serde(default)]
    pub message: Option<String>,
}

/// Usage numbers to report.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Of those, reasoning tokens (where the wire reports them).
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Turn {
    /// Usage to report: given, or a rough count of the reply.
    pub fn usage(&self) -> MockUsage {
        self.usage.unwrap_or(MockUsage {
            input_tokens: 10,
            output_tokens: (self.text.as_deref().unwrap_or("").len() as u64 / 4 + 1)
                + 8 * self.tool_calls.len() as u64,
            reasoning_tokens: 0,
        })
    }
}
