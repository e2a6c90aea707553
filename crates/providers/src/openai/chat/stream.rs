//! OpenAI Chat Completions streams: the SSE chunks (typed first, `Value` when odd) folded into
//! one reply, tool-call arguments assembled from their pieces.

use crate::error::quote;
use crate::openai::chat::reply::{NAME, finish, malformed, usage};
use crate::sse;
use crate::{CallArgs, ModelResponse, ProviderError, TextSink, ToolCall, Usage, http};
use serde_json::Value;

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates a Chat Completions SSE stream.
#[derive(Default)]
pub struct StreamState {
    text: String,
    calls: Vec<(u64, PartialCall)>,
    finish_reason: Option<String>,
    usage: Usage,
    choices_seen: bool,
    done: bool,
}

/// A stream chunk of the usual shape, read without building a `Value` tree (most of a streamed
/// reply's cost). Anything else (an error, a missing or odd field) goes the `Value` way, which
/// reads leniently and names what is wrong.
#[derive(serde::Deserialize)]
struct Chunk {
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    choices: Option<Vec<ChunkChoice>>,
}

#[derive(serde::Deserialize)]
struct ChunkChoice {
    delta: ChunkDelta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(serde::Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ChunkCall>>,
}

#[derive(serde::Deserialize)]
struct ChunkCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<ChunkFunction>,
}

#[derive(serde::Deserialize)]
struct ChunkFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

impl StreamState {
    /// Applies a chunk of the usual shape; false (nothing applied) for anything else.
    pub(crate) fn apply_typed(&mut self, data: &str, sink: &TextSink) -> bool {
        if !data.starts_with('{') {
            return false;
        }
        let Ok(Chunk {
            error: None,
            usage: reported,
            choices: Some(choices),
        }) = serde_json::from_str::<Chunk>(data)
        else {
            return false;
        };
        if let Some(u) = reported.filter(Value::is_object) {
            self.usage = usage(&u);
        }
        for choice in choices {
            self.choices_seen = true;
            self.text_delta(choice.delta.content.as_deref(), sink);
            for tc in choice.delta.tool_calls.into_iter().flatten() {
                let f = tc.function.as_ref();
                self.call_delta(
                    tc.index,
                    tc.id.as_deref(),
                    f.and_then(|f| f.name.as_deref()),
                    f.and_then(|f| f.arguments.as_deref()),
                );
            }
            if let Some(r) = choice.finish_reason {
                self.finish_reason = Some(r);
            }
        }
        true
    }

    /// Applies any chunk, read as a `Value` tree.
    pub(crate) fn apply_value(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream chunk ({e}): {}", quote(data))))?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            return Err(ProviderError::Stream {
                provider: NAME,
                message: http::error_message(data),
            });
        }
        if chunk["usage"].is_object() {
            self.usage = usage(&chunk["usage"]);
        }
        // The same shapes a whole reply must have (`choices`, each with a message): a stream
        // of `{"foo":1}` or of null deltas is malformed, never an empty answer. The last
        // chunk may carry only usage, with no choices.
        let Some(choices) = chunk["choices"].as_array() else {
            return Err(malformed(format!(
                "stream chunk without a `choices` array: {}",
                quote(data)
            )));
        };
        for choice in choices {
            let delta = &choice["delta"];
            if !delta.is_object() {
                return Err(malformed(format!(
                    "stream choice without a `delta` object: {}",
                    quote(data)
                )));
            }
            self.choices_seen = true;
            self.text_delta(delta["content"].as_str(), sink);
            for tc in delta["tool_calls"].as_array().into_iter().flatten() {
                let f = &tc["function"];
                self.call_delta(
                    tc["index"].as_u64(),
                    tc["id"].as_str(),
                    f["name"].as_str(),
                    f["arguments"].as_str(),
                );
            }
            if let Some(r) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(r.to_string());
            }
        }
        Ok(())
    }

    /// Streamed answer text.
    fn text_delta(&mut self, text: Option<&str>, sink: &TextSink) {
        if let Some(t) = text.filter(|t| !t.is_empty()) {
            self.text.push_str(t);
            sink(t);
        }
    }

    /// A piece of tool call `index` (a call without an index is a new one).
    fn call_delta(
        &mut self,
        index: Option<u64>,
        id: Option<&str>,
        name: Option<&str>,
        args: Option<&str>,
    ) {
        let index = index.unwrap_or(self.calls.len() as u64);
        let pos = match self.calls.iter().position(|(i, _)| *i == index) {
            Some(p) => p,
            None => {
                self.calls.push((index, PartialCall::default()));
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos].1;
        if let Some(id) = id {
            call.id = id.to_string();
        }
        if let Some(n) = name {
            call.name.push_str(n);
        }
        if let Some(a) = args {
            call.arguments.push_str(a);
        }
    }
}

impl sse::StreamState for StreamState {
    /// Applies one `data:` payload.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if self.apply_typed(data, sink) {
            return Ok(());
        }
        self.apply_value(data, sink)
    }

    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before a finish_reason or [DONE]".into(),
            });
        }
        if !self.choices_seen {
            return Err(malformed("no choices in the stream"));
        }
        let mut calls = Vec::new();
        for (i, (_, c)) in self.calls.into_iter().enumerate() {
            if c.name.is_empty() {
                return Err(malformed(format!("streamed tool call {i} has no name")));
            }
            let id = if c.id.is_empty() {
                format!("call_{i}")
            } else {
                c.id
            };
            calls.push(ToolCall {
                id,
                name: c.name,
                args: CallArgs::from_text(&c.arguments),
            });
        }
        finish(self.text, calls, self.finish_reason.as_deref(), self.usage)
    }
}

/// Parses a whole recorded SSE text (for tests and replay).
pub fn parse_sse(text: &str, sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    sse::parse_text::<StreamState>(text, sink)
}
