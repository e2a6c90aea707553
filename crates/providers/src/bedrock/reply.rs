//! Bedrock Converse replies: a whole JSON reply parsed, and the `application/vnd.amazon.eventstream`
//! binary stream of ConverseStream decoded frame by frame (by `aws-smithy-eventstream`, which
//! checks each frame's CRCs) and assembled like the other wires' streams.

use crate::error::quote;
use crate::{CallArgs, Limits, ModelResponse, ProviderError, StopReason, TextSink, ToolCall};
use crate::{Usage, http};
use aws_smithy_eventstream::frame::read_message_from;
use aws_smithy_types::event_stream::{HeaderValue, Message};
use serde_json::Value;

pub(crate) const NAME: &str = "bedrock";

/// The media type of ConverseStream's reply.
pub const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

pub(crate) fn malformed(message: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        provider: NAME,
        message: message.into(),
    }
}

/// Converse's `stopReason` as kiln's.
pub fn stop_reason(s: Option<&str>, has_calls: bool) -> StopReason {
    match s {
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("end_turn") | None if has_calls => StopReason::ToolUse,
        Some("end_turn") | None => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

fn usage(u: &Value) -> Usage {
    Usage::new(
        u["inputTokens"].as_u64().unwrap_or(0),
        u["outputTokens"].as_u64().unwrap_or(0),
    )
}

fn finish(
    text: String,
    calls: Vec<ToolCall>,
    stop: Option<&str>,
    usage: Usage,
) -> Result<ModelResponse, ProviderError> {
    let stop = stop_reason(stop, !calls.is_empty());
    if stop == StopReason::MaxTokens
        && let Some(last) = calls.last()
    {
        return Err(ProviderError::Truncated {
            provider: NAME,
            tool: quote(&last.name),
        });
    }
    Ok(ModelResponse {
        answered_by: None,
        replay: None,
        text,
        tool_calls: calls,
        stop,
        usage,
    })
}

/// Parses a whole Converse reply: `output.message.content` (text and `toolUse` blocks),
/// `stopReason`, `usage`.
pub fn parse_response(v: &Value) -> Result<ModelResponse, ProviderError> {
    let Some(content) = v["output"]["message"]["content"].as_array() else {
        let what = match v.get("message").and_then(Value::as_str) {
            Some(m) => format!(": the service said {}", quote(m)),
            None => format!(": {}", quote(&v.to_string())),
        };
        return Err(malformed(format!(
            "the reply has no output.message.content list{what}"
        )));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for (i, block) in content.iter().enumerate() {
        if let Some(t) = block.get("text") {
            let t = t
                .as_str()
                .ok_or_else(|| malformed(format!("content block {i}: `text` is not a string")))?;
            text.push_str(t);
        } else if let Some(u) = block.get("toolUse") {
            let field = |name: &str| {
                u[name].as_str().map(str::to_string).ok_or_else(|| {
                    malformed(format!(
                        "content block {i}: toolUse without a `{name}` string"
                    ))
                })
            };
            let input = match &u["input"] {
                Value::Null => Value::Object(Default::default()),
                v => v.clone(),
            };
            calls.push(ToolCall {
                id: field("toolUseId")?,
                name: field("name")?,
                args: CallArgs::parsed(input),
            });
        }
    }
    finish(text, calls, v["stopReason"].as_str(), usage(&v["usage"]))
}

/// A tool-use block being streamed.
struct ToolBlock {
    index: u64,
    id: String,
    name: String,
    json: String,
    done: bool,
}

/// What a ConverseStream reply has said so far.
#[derive(Default)]
pub struct StreamState {
    started: bool,
    text: String,
    /// Text went to the sink: asking again would repeat it.
    streamed: bool,
    tools: Vec<ToolBlock>,
    stop: Option<String>,
    stopped: bool,
    usage: Usage,
}

fn header<'m>(msg: &'m Message, name: &str) -> Option<&'m str> {
    msg.headers()
        .iter()
        .find(|h| h.name().as_str() == name)
        .and_then(|h| match h.value() {
            HeaderValue::String(s) => Some(s.as_str()),
            _ => None,
        })
}

/// The HTTP status the service model gives an exception a stream may carry.
fn exception_status(kind: &str) -> u16 {
    match kind {
        "throttlingException" => 429,
        "serviceUnavailableException" => 503,
        "internalServerException" => 500,
        "modelStreamErrorException" => 424,
        "modelTimeoutException" => 408,
        _ => 400,
    }
}

impl StreamState {
    /// Applies one decoded frame; streamed text goes to `sink`.
    pub fn apply(&mut self, msg: &Message, sink: &TextSink) -> Result<(), ProviderError> {
        let payload = || String::from_utf8_lossy(msg.payload()).into_owned();
        match header(msg, ":message-type") {
            Some("event") => {}
            Some("exception") => {
                let kind = header(msg, ":exception-type").unwrap_or("exception");
                let text = payload();
                let said = serde_json::from_str::<Value>(&text)
                    .ok()
                    .and_then(|v| v["message"].as_str().map(str::to_string))
                    .unwrap_or(text);
                return Err(ProviderError::Http {
                    provider: NAME,
                    status: exception_status(kind),
                    message: format!("{kind} in the stream: {}", quote(&said)),
                });
            }
            Some("error") => {
                return Err(ProviderError::Stream {
                    provider: NAME,
                    message: format!(
                        "{}: {}",
                        header(msg, ":error-code").unwrap_or("error"),
                        quote(header(msg, ":error-message").unwrap_or_default())
                    ),
                });
            }
            other => {
                return Err(malformed(format!(
                    "event stream frame with :message-type {}",
                    other.map_or("missing".to_string(), quote)
                )));
            }
        }
        let kind = header(msg, ":event-type")
            .ok_or_else(|| malformed("event stream frame without an :event-type header"))?;
        let v: Value = serde_json::from_slice(msg.payload()).map_err(|e| {
            malformed(format!(
                "{kind} event is not JSON ({e}): {}",
                quote(&payload())
            ))
        })?;
        if !v.is_object() {
            return Err(malformed(format!(
                "{kind} event is not an object: {}",
                quote(&payload())
            )));
        }
        self.event(kind, &v, sink)
    }

    fn event(&mut self, kind: &str, v: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        let index = v["contentBlockIndex"].as_u64().unwrap_or(0);
        match kind {
            "messageStart" => self.started = true,
            "contentBlockStart" => {
                if let Some(u) = v["start"].get("toolUse") {
                    let field = |name: &str| {
                        u[name].as_str().map(str::to_string).ok_or_else(|| {
                            malformed(format!("contentBlockStart toolUse without `{name}`"))
                        })
                    };
                    self.tools.push(ToolBlock {
                        index,
                        id: field("toolUseId")?,
                        name: field("name")?,
                        json: String::new(),
                        done: false,
                    });
                }
            }
            "contentBlockDelta" => self.delta(index, &v["delta"], sink)?,
            "contentBlockStop" => {
                if let Some(t) = self.tools.iter_mut().rev().find(|t| t.index == index) {
                    t.done = true;
                }
            }
            "messageStop" => {
                self.stopped = true;
                self.stop = v["stopReason"].as_str().map(str::to_string);
            }
            "metadata" => self.usage = usage(&v["usage"]),
            _ => {}
        }
        Ok(())
    }

    fn delta(&mut self, index: u64, d: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        if let Some(t) = d.get("text") {
            let t = t
                .as_str()
                .ok_or_else(|| malformed("contentBlockDelta text is not a string"))?;
            self.text.push_str(t);
            self.streamed |= !t.is_empty();
            sink(t);
        } else if let Some(u) = d.get("toolUse") {
            let part = u["input"]
                .as_str()
                .ok_or_else(|| malformed("contentBlockDelta toolUse.input is not a string"))?;
            match self.tools.iter_mut().rev().find(|t| t.index == index) {
                Some(t) => t.json.push_str(part),
                None => {
                    return Err(malformed(format!(
                        "toolUse delta for block {index}, which no contentBlockStart opened"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The reply once the stream ended.
    pub fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.started && self.stopped {
            return Err(malformed("the stream has no messageStart"));
        }
        let mut calls = Vec::new();
        for t in self.tools {
            if !t.done || self.stop.as_deref() == Some("max_tokens") {
                return Err(ProviderError::Truncated {
                    provider: NAME,
                    tool: quote(&t.name),
                });
            }
            calls.push(ToolCall {
                id: t.id,
                name: t.name,
                args: CallArgs::from_text(&t.json),
            });
        }
        if !self.stopped {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before messageStop".into(),
            });
        }
        finish(self.text, calls, self.stop.as_deref(), self.usage)
    }
}

/// Splits an event stream into frames across chunk boundaries, refusing a frame longer than
/// its limit before buffering it.
pub struct FrameReader {
    buf: bytes::BytesMut,
    max_frame: usize,
}

impl FrameReader {
    /// A reader whose frames may be at most `max_frame` bytes.
    pub fn new(max_frame: usize) -> FrameReader {
        FrameReader {
            buf: bytes::BytesMut::new(),
            max_frame,
        }
    }

    /// The frames `bytes` completes, each decoded and its CRCs checked.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Message>, ProviderError> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(len) = self.buf.get(..4) {
            let total = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
            if total > self.max_frame {
                return Err(ProviderError::TooLarge {
                    provider: NAME,
                    what: "one event stream frame",
                    limit: self.max_frame,
                    setting: "--max-line-bytes or .max_line_bytes(n)",
                    start: crate::error::quote_bytes(&self.buf[..self.buf.len().min(64)]),
                });
            }
            if total < 16 {
                return Err(malformed(format!(
                    "event stream frame of {total} bytes (a frame has at least 16)"
                )));
            }
            if self.buf.len() < total {
                break;
            }
            let frame = self.buf.split_to(total).freeze();
            let msg = read_message_from(frame)
                .map_err(|e| malformed(format!("bad event stream frame: {e}")))?;
            out.push(msg);
        }
        Ok(out)
    }

    /// Whether bytes of an unfinished frame are left.
    pub fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }
}

/// Reads a ConverseStream reply as it arrives, within `limits`; an error says whether asking
/// again may help (a throttling or unavailability exception before any text was streamed).
pub async fn read_event_stream(
    resp: reqwest::Response,
    limits: &Limits,
    sink: &TextSink,
) -> Result<ModelResponse, (ProviderError, bool)> {
    let resp = http::expect_content_type(NAME, resp, &[EVENT_STREAM], limits)
        .await
        .map_err(|e| (e, false))?;
    let mut reader = FrameReader::new(limits.max_line_bytes);
    let mut state = StreamState::default();
    let read = http::for_each_chunk(NAME, resp, limits, |bytes| {
        for msg in reader.push(bytes)? {
            state.apply(&msg, sink)?;
        }
        Ok(())
    })
    .await;
    if let Err(e) = read {
        let retry = !state.streamed
            && matches!(
                e,
                ProviderError::Http {
                    status: 429 | 500 | 503,
                    ..
                }
            );
        return Err((e, retry));
    }
    if reader.has_partial() {
        return Err((
            ProviderError::Transport {
                provider: NAME,
                message: "the stream ended in the middle of an event stream frame".into(),
            },
            false,
        ));
    }
    state.finish().map_err(|e| (e, false))
}

/// Parses a whole recorded event stream (tests and replay).
pub fn parse_event_stream(bytes: &[u8], sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    let mut reader = FrameReader::new(Limits::DEFAULT_MAX_LINE_BYTES);
    let mut state = StreamState::default();
    for msg in reader.push(bytes)? {
        state.apply(&msg, sink)?;
    }
    if reader.has_partial() {
        return Err(malformed("the stream ended in the middle of a frame"));
    }
    state.finish()
}
