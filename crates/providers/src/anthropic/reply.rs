//! Anthropic Messages replies: a whole JSON reply, and an SSE stream folded into one (its
//! events of the usual shapes read typed, anything else as a `Value`).

use crate::error::quote;
use crate::{CallArgs, ModelResponse, ProviderError, StopReason, TextSink, ToolCall, Usage};
use crate::{http, sse};
use serde_json::{Value, json};
use std::borrow::Cow;

pub(crate) const NAME: &str = "anthropic";

fn stop_reason(s: Option<&str>) -> StopReason {
    match s {
        Some("end_turn") | None => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

pub(crate) fn malformed(message: impl Into<String>) -> ProviderError {
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
                args: CallArgs::parsed(b.get("input").cloned().unwrap_or(json!({}))),
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
        reasoning_tokens: 0,
        input_tokens: v["usage"]["input_tokens"].as_u64().unwrap_or(0),
        output_tokens: v["usage"]["output_tokens"].as_u64().unwrap_or(0),
    };
    Ok(ModelResponse {
        replay: super::search::replay(blocks),
        answered_by: None,
        text,
        tool_calls: calls,
        stop,
        usage,
    })
}

enum Block {
    /// Text, from this byte of the reply's text on (blocks stream one after another).
    Text(usize),
    /// A block the service ran itself ([`super::search::server_block`]), kept for the
    /// replay; a `server_tool_use`'s input streams as JSON.
    Server {
        block: Value,
        json: String,
    },
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

/// A stream event of the usual shapes, read without building a `Value` tree (most of a
/// streamed reply's cost). Anything else (an error, a missing or odd field) goes the `Value`
/// way, which reads leniently and names what is wrong.
#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    message: Option<Object<EventMessage>>,
    #[serde(default, borrow)]
    content_block: Option<Object<EventBlock<'a>>>,
    #[serde(default, borrow)]
    delta: Option<Object<EventDelta<'a>>>,
    #[serde(default)]
    usage: Option<Object<Tokens>>,
}

#[derive(serde::Deserialize)]
struct EventMessage {
    #[serde(default)]
    usage: Option<Object<Tokens>>,
}

#[derive(serde::Deserialize, Default)]
struct Tokens {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(serde::Deserialize)]
struct EventBlock<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct EventDelta<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
}

/// A JSON object read as `T`: anything else (an array, which a derived struct would also
/// take) is refused, as the `Value` reading refuses it.
struct Object<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Object<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData))
    }
}

impl StreamState {
    /// Applies an event of the usual shape; false (nothing applied) for anything else.
    fn apply_typed(&mut self, data: &str, sink: &TextSink) -> bool {
        if !data.starts_with('{') {
            return false;
        }
        let Ok(ev) = serde_json::from_str::<Event<'_>>(data) else {
            return false;
        };
        let index = ev.index.unwrap_or(0);
        let tokens = |t: Option<Object<Tokens>>| t.map(|t| t.0).unwrap_or_default();
        match (&*ev.kind, ev.message, ev.content_block, ev.delta) {
            ("message_start", Some(Object(m)), _, _) => {
                let u = tokens(m.usage);
                self.message_start(u.input_tokens, u.output_tokens);
            }
            ("content_block_start", _, Some(Object(b)), _)
                if b.kind.as_deref().is_some_and(super::search::server_block) =>
            {
                return false;
            }
            ("content_block_start", _, Some(Object(b)), _) => self.block_start(
                index,
                b.kind.as_deref(),
                b.text.as_deref(),
                b.id.as_deref(),
                b.name.as_deref(),
                sink,
            ),
            ("content_block_delta", _, _, Some(Object(d))) => {
                let kind = d.kind.as_deref();
                if kind == Some("input_json_delta") && self.tool_json(index).is_none() {
                    return false;
                }
                let _ = self.block_delta(
                    index,
                    kind,
                    d.text.as_deref(),
                    d.partial_json.as_deref(),
                    sink,
                );
            }
            ("message_delta", _, _, Some(Object(d))) => {
                self.message_delta(d.stop_reason.as_deref(), tokens(ev.usage).output_tokens)
            }
            ("message_start" | "content_block_start" | "content_block_delta", ..)
            | ("message_delta" | "error", ..) => return false,
            ("content_block_stop", ..) => self.block_stop(index),
            ("message_stop", ..) => self.finished = true,
            _ => {}
        }
        true
    }

    /// Applies any event, read as a `Value` tree.
    fn apply_value(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
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
                let u = &ev["message"]["usage"];
                self.message_start(u["input_tokens"].as_u64(), u["output_tokens"].as_u64());
            }
            "content_block_start"
                if ev["content_block"]["type"]
                    .as_str()
                    .is_some_and(super::search::server_block) =>
            {
                let (block, json) = (ev["content_block"].clone(), String::new());
                self.order.push((index, Block::Server { block, json }));
            }
            "content_block_start" => {
                let b = &ev["content_block"];
                self.block_start(
                    index,
                    b["type"].as_str(),
                    b["text"].as_str(),
                    b["id"].as_str(),
                    b["name"].as_str(),
                    sink,
                );
            }
            "content_block_delta" => {
                let d = &ev["delta"];
                self.block_delta(
                    index,
                    d["type"].as_str(),
                    d["text"].as_str(),
                    d["partial_json"].as_str(),
                    sink,
                )?;
            }
            "content_block_stop" => self.block_stop(index),
            "message_delta" => self.message_delta(
                ev["delta"]["stop_reason"].as_str(),
                ev["usage"]["output_tokens"].as_u64(),
            ),
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

    fn message_start(&mut self, input_tokens: Option<u64>, output_tokens: Option<u64>) {
        self.started = true;
        self.usage.input_tokens = input_tokens.unwrap_or(0);
        self.usage.output_tokens = output_tokens.unwrap_or(0);
    }

    fn block_start(
        &mut self,
        index: u64,
        kind: Option<&str>,
        text: Option<&str>,
        id: Option<&str>,
        name: Option<&str>,
        sink: &TextSink,
    ) {
        let block = match kind {
            Some("text") => {
                let start = self.text.len();
                let t = text.unwrap_or_default();
                if !t.is_empty() {
                    self.text.push_str(t);
                    sink(t);
                }
                Block::Text(start)
            }
            Some("tool_use") => Block::Tool {
                id: id.unwrap_or_default().to_string(),
                name: name.unwrap_or_default().to_string(),
                json: String::new(),
                done: false,
            },
            _ => Block::Other,
        };
        self.order.push((index, block));
    }

    /// The arguments so far of the tool-use (or server tool-use) block `index`, if it is one.
    fn tool_json(&mut self, index: u64) -> Option<&mut String> {
        match self.order.iter_mut().rev().find(|(i, _)| *i == index) {
            Some((_, Block::Tool { json, .. } | Block::Server { json, .. })) => Some(json),
            _ => None,
        }
    }

    fn block_delta(
        &mut self,
        index: u64,
        kind: Option<&str>,
        text: Option<&str>,
        partial_json: Option<&str>,
        sink: &TextSink,
    ) -> Result<(), ProviderError> {
        match kind {
            Some("text_delta") => {
                let t = text.unwrap_or_default();
                self.text.push_str(t);
                sink(t);
            }
            Some("input_json_delta") => match self.tool_json(index) {
                Some(json) => json.push_str(partial_json.unwrap_or_default()),
                None => {
                    return Err(malformed(format!(
                        "input_json_delta for unknown block {index}"
                    )));
                }
            },
            _ => {}
        }
        Ok(())
    }

    fn block_stop(&mut self, index: u64) {
        if let Some((_, Block::Tool { done, .. })) =
            self.order.iter_mut().rev().find(|(i, _)| *i == index)
        {
            *done = true;
        }
    }

    fn message_delta(&mut self, stop_reason: Option<&str>, output_tokens: Option<u64>) {
        if let Some(s) = stop_reason {
            self.stop = Some(s.to_string());
        }
        if let Some(o) = output_tokens {
            self.usage.output_tokens = o;
        }
    }
}

impl StreamState {
    /// The replay of a streamed reply that holds server blocks: every block as a whole reply
    /// would have held it ([`super::search::replay`]).
    fn replay(&self) -> Option<crate::Replay> {
        if !self
            .order
            .iter()
            .any(|(_, b)| matches!(b, Block::Server { .. }))
        {
            return None;
        }
        let starts = self.order.iter().filter_map(|(_, b)| match b {
            Block::Text(start) => Some(*start),
            _ => None,
        });
        let mut ends: Vec<usize> = starts.skip(1).collect();
        ends.push(self.text.len());
        let mut ends = ends.into_iter();
        let mut blocks = Vec::new();
        for (_, b) in &self.order {
            blocks.push(match b {
                Block::Text(start) => {
                    let end = ends.next().unwrap_or(self.text.len());
                    json!({"type": "text", "text": self.text.get(*start..end).unwrap_or_default()})
                }
                Block::Server { block, json } => {
                    let mut block = block.clone();
                    if !json.trim().is_empty() {
                        block["input"] = CallArgs::from_text(json).to_value();
                    }
                    block
                }
                Block::Tool { id, name, json, .. } => {
                    json!({"type": "tool_use", "id": id, "name": name, "input": CallArgs::from_text(json).to_value()})
                }
                Block::Other => continue,
            });
        }
        super::search::replay(&blocks)
    }
}

impl sse::StreamState for StreamState {
    /// Applies one event's data (read typed when it has the usual shape); streamed text goes
    /// to `sink`.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() || self.apply_typed(data, sink) {
            return Ok(());
        }
        self.apply_value(data, sink)
    }

    /// The reply once the stream ended.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        if !self.started && (self.finished || self.stop.is_some()) {
            return Err(malformed("the stream has no message_start"));
        }
        let stop = stop_reason(self.stop.as_deref());
        let replay = self.replay();
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
            replay,
            answered_by: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usual_stream_events_read_typed_as_they_read_as_values() {
        let events = [
            r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":7,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hé "}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\"x\"\n"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"calc","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let into = seen.clone();
        let sink: TextSink = std::sync::Arc::new(move |t: &str| into.lock().unwrap().push_str(t));
        let (mut typed, mut values) = (StreamState::default(), StreamState::default());
        for e in events {
            assert!(typed.apply_typed(e, &sink), "read typed: {e}");
        }
        let typed_text = std::mem::take(&mut *seen.lock().unwrap());
        for e in events {
            values.apply_value(e, &sink).expect("reads as a value");
        }
        assert_eq!(typed_text, *seen.lock().unwrap());
        let sse = |s: StreamState| sse::StreamState::finish(s);
        assert_eq!(sse(typed).expect("typed"), sse(values).expect("values"));
        // Odd shapes are left to the lenient reading, which names what is wrong (or reads
        // them as it always did), and nothing of them is applied typed.
        for odd in [
            r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#,
            r#"{"type":"message_start","message":null}"#,
            r#"{"type":"message_start","message":[]}"#,
            r#"{"type":"message_start","message":{"usage":{"input_tokens":"7"}}}"#,
            r#"{"type":"content_block_start","index":0}"#,
            r#"{"type":"content_block_delta","index":0,"delta":[]}"#,
            r#"{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            r#"{"type":"message_delta","usage":{"output_tokens":1}}"#,
            r#"{"type":5}"#,
            r#"{"index":0}"#,
            r#"["type"]"#,
        ] {
            let mut state = StreamState::default();
            assert!(!state.apply_typed(odd, &sink), "{odd}");
            assert!(state.order.is_empty() && !state.started, "{odd}");
        }
    }
}
