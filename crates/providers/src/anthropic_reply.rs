//! Anthropic Messages replies: a whole JSON reply, and an SSE stream folded into one (its
//! events of the usual shapes read typed, anything else as a `Value`).

use super::error::quote;
use super::{CallArgs, ModelResponse, ProviderError, StopReason, TextSink, ToolCall, Usage};
use super::{http, sse};
use serde_json::{Value, json};

pub(super) const NAME: &str = "anthropic";

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

pub(super) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

/// Parses a whole (non-streamed) reply.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    if v["type"] == "error" {
        return Err(ProviderError::Stream {
            provider: NAME,
            message: http::error_message(&v.to_string()),
        });
    }
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| malformed("no `content` array"))?;
    let mut text = String::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b["type"].as_str() {
            Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
            Some("tool_use") => calls.push(ToolCall {
                id: b["id"]
                    .as_str()
                    .ok_or_else(|| malformed("tool_use without id"))?
                    .to_string(),
                name: b["name"]
                    .as_str()
                    .ok_or_else(|| malformed("tool_use without name"))?
                    .to_string(),
                args: CallArgs::Parsed(b.get("input").cloned().unwrap_or(json!({}))),
            }),
            _ => {}
        }
    }
    let stop = stop_reason(v["stop_reason"].as_str());
    if stop == StopReason::MaxTokens
        && let Some(last) = calls.last()
    {
        return Err(ProviderError::Truncated {
            provider: NAME,
            tool: quote(&last.name),
        });
    }
    let usage = Usage {
        input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
    };
    Ok(ModelResponse {
        text,
        tool_calls: calls,
        stop,
        usage,
    })
}

enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        json: String,
        done: bool,
    },
    Other,
}

/// Accumulates a Messages SSE stream into a reply.
#[derive(Default)]
pub struct StreamState {
    order: Vec<(u64, Block)>,
    text: String,
    usage: Usage,
    stop: Option<String>,
    started: bool,
    finished: bool,
}

impl sse::StreamState for StreamState {
    /// Applies one event's data; streamed text goes to `sink`.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream event ({e}): {}", quote(data))))?;
        let index = ev["index"].as_u64().unwrap_or(0);
        // The same shapes a whole reply must have: a stream of `{"foo":1}` or of a null
        // message is as malformed as the reply `{"foo":1}`, never an empty answer.
        let Some(kind) = ev["type"].as_str() else {
            return Err(malformed(format!(
                "stream event without a `type`: {}",
                quote(data)
            )));
        };
        let object = |field: &str| {
            if ev[field].is_object() {
                Ok(())
            } else {
                Err(malformed(format!(
                    "{kind} event without a `{field}` object: {}",
                    quote(data)
                )))
            }
        };
        match kind {
            "message_start" => object("message")?,
            "content_block_start" => object("content_block")?,
            "content_block_delta" | "message_delta" => object("delta")?,
            _ => {}
        }
        match kind {
            "message_start" => {
                self.started = true;
                let u = &ev["message"]["usage"];
                self.usage.input_tokens = u["input_tokens"].as_u64().unwrap_or(0);
                self.usage.output_tokens = u["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                let b = &ev["content_block"];
                let block = match b["type"].as_str() {
                    Some("text") => {
                        let t = b["text"].as_str().unwrap_or_default();
                        if !t.is_empty() {
                            self.text.push_str(t);
                            sink(t);
                        }
                        Block::Text
                    }
                    Some("tool_use") => Block::Tool {
                        id: b["id"].as_str().unwrap_or_default().to_string(),
                        name: b["name"].as_str().unwrap_or_default().to_string(),
                        json: String::new(),
                        done: false,
                    },
                    _ => Block::Other,
                };
                self.order.push((index, block));
            }
            "content_block_delta" => {
                let d = &ev["delta"];
                let block = self
                    .order
                    .iter_mut()
                    .rev()
                    .find(|(i, _)| *i == index)
                    .map(|(_, b)| b);
                match (d["type"].as_str(), block) {
                    (Some("text_delta"), _) => {
                        let t = d["text"].as_str().unwrap_or_default();
                        self.text.push_str(t);
                        sink(t);
                    }
                    (Some("input_json_delta"), Some(Block::Tool { json, .. })) => {
                        json.push_str(d["partial_json"].as_str().unwrap_or_default())
                    }
                    (Some("input_json_delta"), _) => {
                        return Err(malformed(format!(
                            "input_json_delta for unknown block {index}"
                        )));
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                if let Some((_, Block::Tool { done, .. })) =
                    self.order.iter_mut().rev().find(|(i, _)| *i == index)
                {
                    *done = true;
                }
            }
            "message_delta" => {
                if let Some(s) = ev["delta"]["stop_reason"].as_str() {
                    self.stop = Some(s.to_string());
                }
                if let Some(o) = ev["usage"]["output_tokens"].as_u64() {
                    self.usage.output_tokens = o;
                }
            }
            "message_stop" => self.finished = true,
            "error" => {
                return Err(ProviderError::Stream {
                    provider: NAME,
                    message: http::error_message(data),
                });
            }
            _ => {}
        }
        Ok(())
    }

    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.started && (self.finished || self.stop.is_some()) {
            return Err(malformed("the stream has no message_start"));
        }
        let stop = stop_reason(self.stop.as_deref());
        let mut calls = Vec::new();
        for (_, b) in self.order {
            if let Block::Tool {
                id,
                name,
                json,
                done,
            } = b
            {
                if !done || stop == StopReason::MaxTokens {
                    return Err(ProviderError::Truncated {
                        provider: NAME,
                        tool: quote(&name),
                    });
                }
                calls.push(ToolCall {
                    id,
                    name,
                    args: CallArgs::from_text(&json),
                });
            }
        }
        if !self.finished && self.stop.is_none() {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before message_stop".into(),
            });
        }
        Ok(ModelResponse {
            text: self.text,
            tool_calls: calls,
            stop,
            usage: self.usage,
        })
    }
}

/// Parses a whole recorded SSE text (for tests and replay).
pub fn parse_sse(text: &str, sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    sse::parse_text::<StreamState>(text, sink)
}
