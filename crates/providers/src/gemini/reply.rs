//! Gemini replies: a `GenerateContentResponse` (whole, or each chunk of a stream) folded into
//! one reply: text (thought parts kept apart), whole function calls, the thought signatures
//! of each part (into the reply's [`Replay`]), the finish reason, blocks and usage.

use crate::error::quote;
use crate::{CallArgs, ModelResponse, ProviderError, Replay, StopReason, TextSink, ToolCall};
use crate::{Usage, sse};
use serde_json::{Map, Value, json};

/// The prefix of the ids kiln gives calls Gemini sent without one; such ids stay off the wire.
pub const MADE_UP_ID: &str = "gemini_call_";

/// The provider's name in errors.
pub const NAME: &str = "gemini";
/// The wire name of the [`Replay`] a Gemini reply carries.
pub const WIRE: &str = "gemini";

pub(crate) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

/// A field of a protobuf-JSON object in either spelling (`finishReason`, `finish_reason`).
fn field<'v>(v: &'v Value, camel: &str) -> &'v Value {
    match v.get(camel) {
        Some(found) => found,
        None => {
            let mut snake = String::with_capacity(camel.len() + 4);
            for c in camel.chars() {
                if c.is_ascii_uppercase() {
                    snake.push('_');
                    snake.push(c.to_ascii_lowercase());
                } else {
                    snake.push(c);
                }
            }
            v.get(&snake).unwrap_or(&Value::Null)
        }
    }
}

/// A Gemini reply being assembled from one `GenerateContentResponse` or a stream of them.
#[derive(Default)]
pub struct StreamState {
    text: String,
    /// The signature that came on a text part (the last one).
    text_signature: Option<String>,
    calls: Vec<ToolCall>,
    /// Each call's signature, in call order.
    call_signatures: Vec<Option<String>>,
    /// Thought parts, as sent (they go back as they came).
    thoughts: Vec<Value>,
    finish_reason: Option<String>,
    finish_message: Option<String>,
    block_reason: Option<String>,
    usage: Usage,
    candidates_seen: bool,
}

impl StreamState {
    /// Applies one `GenerateContentResponse`; its text goes to `sink`.
    pub fn apply_value(&mut self, v: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        let Some(obj) = v.as_object() else {
            return Err(malformed(format!(
                "a GenerateContentResponse must be a JSON object: {}",
                quote(&v.to_string())
            )));
        };
        if let Some(e) = obj.get("error").filter(|e| !e.is_null()) {
            return Err(ProviderError::Stream {
                provider: NAME,
                message: error_text(e),
            });
        }
        let usage = field(v, "usageMetadata");
        if usage.is_object() {
            self.usage = usage_of(usage);
        }
        if let Some(r) = field(field(v, "promptFeedback"), "blockReason").as_str() {
            self.block_reason = Some(r.to_string());
        }
        let candidates = field(v, "candidates");
        let Some(first) = candidates.as_array().and_then(|c| c.first()) else {
            if candidates.is_null() || candidates.as_array().is_some() {
                return Ok(());
            }
            return Err(malformed("`candidates` is not a list"));
        };
        self.candidates_seen = true;
        self.candidate(first, sink)
    }

    fn candidate(&mut self, c: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        if let Some(r) = field(c, "finishReason").as_str() {
            self.finish_reason = Some(r.to_string());
        }
        if let Some(m) = field(c, "finishMessage").as_str() {
            self.finish_message = Some(m.to_string());
        }
        let content = field(c, "content");
        let parts = field(content, "parts");
        if parts.is_null() {
            return Ok(());
        }
        let Some(parts) = parts.as_array() else {
            return Err(malformed("`content.parts` of candidate 0 is not a list"));
        };
        for (i, part) in parts.iter().enumerate() {
            self.part(i, part, sink)?;
        }
        Ok(())
    }

    fn part(&mut self, i: usize, part: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        if !part.is_object() {
            return Err(malformed(format!(
                "part {i} of candidate 0 is not an object"
            )));
        }
        let signature = field(part, "thoughtSignature").as_str().map(str::to_string);
        if field(part, "thought") == &Value::Bool(true) {
            self.thoughts.push(part.clone());
            return Ok(());
        }
        let call = field(part, "functionCall");
        if call.is_object() {
            return self.call(call, signature);
        }
        if let Some(text) = field(part, "text").as_str() {
            if !text.is_empty() {
                self.text.push_str(text);
                sink(text);
            }
            if signature.is_some() {
                self.text_signature = signature;
            }
        } else if let Some(sig) = signature {
            // A part of another kind (code, media) kiln does not send back: its signature
            // rides on the text.
            self.text_signature = Some(sig);
        }
        Ok(())
    }

    fn call(&mut self, call: &Value, signature: Option<String>) -> Result<(), ProviderError> {
        let n = self.calls.len();
        let name = field(call, "name")
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| malformed(format!("function call {n} has no name")))?;
        let args = match field(call, "args") {
            Value::Null => json!({}),
            v @ Value::Object(_) => v.clone(),
            other => {
                return Err(malformed(format!(
                    "the arguments of function call {n} ({name}) are not an object: {}",
                    quote(&other.to_string())
                )));
            }
        };
        let id = field(call, "id")
            .as_str()
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("{}{n}", MADE_UP_ID), str::to_string);
        self.calls.push(ToolCall {
            id,
            name: name.to_string(),
            args: CallArgs::parsed(args),
        });
        self.call_signatures.push(signature);
        Ok(())
    }

    /// What Gemini needs back with this turn, if anything.
    fn replay(&self) -> Option<Replay> {
        let signed = self.call_signatures.iter().any(Option::is_some);
        if !signed && self.text_signature.is_none() && self.thoughts.is_empty() {
            return None;
        }
        let mut data = Map::new();
        if let Some(sig) = &self.text_signature {
            data.insert("text".into(), json!(sig));
        }
        if signed {
            data.insert("calls".into(), json!(self.call_signatures));
        }
        if !self.thoughts.is_empty() {
            data.insert("thoughts".into(), json!(self.thoughts));
        }
        Some(Replay {
            wire: WIRE.into(),
            data: Value::Object(data),
        })
    }

    /// The reply, or why there is none.
    pub fn finish_reply(self) -> Result<ModelResponse, ProviderError> {
        if !self.candidates_seen {
            return Err(match &self.block_reason {
                Some(r) => blocked(format!("Gemini blocked the prompt (blockReason {r})")),
                None => malformed("no candidates in the reply"),
            });
        }
        let has_calls = !self.calls.is_empty();
        let produced = has_calls || !self.text.is_empty();
        let reason = self.finish_reason.as_deref();
        let detail = || {
            self.finish_message
                .as_deref()
                .map(|m| format!(": {}", quote(m)))
                .unwrap_or_default()
        };
        let stop = match reason {
            None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") if has_calls => {
                StopReason::ToolUse
            }
            None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => StopReason::EndTurn,
            Some("MAX_TOKENS") if has_calls => StopReason::ToolUse,
            Some("MAX_TOKENS") => StopReason::MaxTokens,
            Some(
                r @ ("MALFORMED_FUNCTION_CALL"
                | "UNEXPECTED_TOOL_CALL"
                | "TOO_MANY_TOOL_CALLS"
                | "MISSING_THOUGHT_SIGNATURE"),
            ) if !has_calls => {
                return Err(malformed(format!(
                    "the model's function call was refused (finishReason {r}){}",
                    detail()
                )));
            }
            Some(r) if !produced => {
                return Err(blocked(format!(
                    "Gemini stopped without an answer (finishReason {r}){}",
                    detail()
                )));
            }
            Some(r) => StopReason::Other(r.to_ascii_lowercase()),
        };
        let replay = self.replay();
        Ok(ModelResponse {
            answered_by: None,
            text: self.text,
            tool_calls: self.calls,
            stop,
            usage: self.usage,
            replay,
        })
    }
}

/// A reply Gemini held back (a safety block, recitation...): nothing to answer with.
fn blocked(message: String) -> ProviderError {
    malformed(format!("no answer: {message}"))
}

/// Google's error object (`{code, message, status}`) as text.
fn error_text(e: &Value) -> String {
    let message = e["message"]
        .as_str()
        .map_or_else(|| e.to_string(), str::to_string);
    match e["status"].as_str() {
        Some(status) => quote(&format!("{status}: {message}")),
        None => quote(&message),
    }
}

/// `usageMetadata` as kiln counts it: output tokens include the thinking ones.
fn usage_of(u: &Value) -> Usage {
    let n = |name: &str| field(u, name).as_u64().unwrap_or(0);
    let thoughts = n("thoughtsTokenCount");
    Usage {
        input_tokens: n("promptTokenCount"),
        output_tokens: n("candidatesTokenCount") + thoughts,
        reasoning_tokens: thoughts,
    }
}

/// Parses a whole (non-streamed) reply.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    let mut state = StreamState::default();
    let quiet: TextSink = std::sync::Arc::new(|_: &str| {});
    state.apply_value(v, &quiet)?;
    state.finish_reply()
}

impl sse::StreamState for StreamState {
    /// Applies one `data:` payload, a `GenerateContentResponse`.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream chunk ({e}): {}", quote(data))))?;
        self.apply_value(&chunk, sink)
    }

    /// The reply once the stream ended: a stream that stopped before a finish reason was cut.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if self.finish_reason.is_none() && self.block_reason.is_none() {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before a finishReason".into(),
            });
        }
        self.finish_reply()
    }
}

/// Parses a whole recorded SSE text (for tests and replay).
pub fn parse_sse(text: &str, sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    sse::parse_text::<StreamState>(text, sink)
}
