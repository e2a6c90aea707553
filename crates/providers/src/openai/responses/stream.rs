//! OpenAI Responses streams: the SSE events (`response.output_item.added`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`/`.done`,
//! `response.output_item.done`, `response.completed`, `response.incomplete`,
//! `response.failed`, `error`) folded into one reply.

use crate::error::quote;
use crate::openai::responses::reply::{NAME, failed, malformed, read_response};
use crate::{ModelResponse, ProviderError, TextSink, sse};
use serde_json::{Value, json};

/// A function call being streamed: its item, arguments growing.
struct OpenCall {
    index: u64,
    item: Value,
    arguments: String,
}

/// Accumulates a Responses SSE stream.
#[derive(Default)]
pub struct StreamState {
    text: String,
    /// Finished output items, by output index.
    items: Vec<(u64, Value)>,
    /// Function calls whose item is not done yet.
    open: Vec<OpenCall>,
    /// The `response` of the terminal event (`response.completed` or `response.incomplete`).
    last: Option<Value>,
}

impl StreamState {
    /// The open call an event names (by `item_id`, else `output_index`).
    fn call(&mut self, ev: &Value) -> Option<&mut OpenCall> {
        let (id, index) = (&ev["item_id"], ev["output_index"].as_u64());
        self.open
            .iter_mut()
            .find(|c| (id.is_string() && c.item["id"] == *id) || Some(c.index) == index)
    }

    fn apply_event(&mut self, ev: &Value, sink: &TextSink) -> Result<(), ProviderError> {
        let index = ev["output_index"]
            .as_u64()
            .unwrap_or(self.items.len() as u64);
        match ev["type"].as_str() {
            Some("response.output_text.delta") => {
                if let Some(t) = ev["delta"].as_str().filter(|t| !t.is_empty()) {
                    self.text.push_str(t);
                    sink(t);
                }
            }
            Some("response.output_item.added") if ev["item"]["type"] == "function_call" => {
                let arguments = ev["item"]["arguments"].as_str().unwrap_or("").to_string();
                self.open.push(OpenCall {
                    index,
                    item: ev["item"].clone(),
                    arguments,
                });
            }
            Some("response.function_call_arguments.delta") => {
                if let (Some(call), Some(d)) = (self.call(ev), ev["delta"].as_str()) {
                    call.arguments.push_str(d);
                }
            }
            Some("response.function_call_arguments.done") => {
                if let (Some(call), Some(a)) = (self.call(ev), ev["arguments"].as_str()) {
                    call.arguments = a.to_string();
                }
            }
            Some("response.output_item.done") => {
                let item = &ev["item"];
                if !item.is_object() {
                    return Err(malformed(format!(
                        "response.output_item.done without an `item` object: {}",
                        quote(&ev.to_string())
                    )));
                }
                self.open.retain(|c| c.index != index);
                self.items.push((index, item.clone()));
            }
            Some("response.completed" | "response.incomplete") => {
                if !ev["response"].is_object() {
                    return Err(malformed(format!(
                        "{} without a `response` object",
                        ev["type"].as_str().unwrap_or_default()
                    )));
                }
                self.last = Some(ev["response"].clone());
            }
            Some("response.failed") => return Err(failed(&ev["response"])),
            Some("error") => {
                let message = match (ev["code"].as_str(), ev["message"].as_str()) {
                    (Some(code), Some(m)) => format!("{code}: {m}"),
                    (None, Some(m)) => m.to_string(),
                    _ => quote(&ev.to_string()),
                };
                return Err(ProviderError::Stream {
                    provider: NAME,
                    message,
                });
            }
            Some(_) => {}
            None => {
                return Err(malformed(format!(
                    "stream event without a `type`: {}",
                    quote(&ev.to_string())
                )));
            }
        }
        Ok(())
    }
}

impl sse::StreamState for StreamState {
    /// Applies one `data:` payload.
    fn apply(&mut self, data: &str, sink: &TextSink) -> Result<(), ProviderError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(());
        }
        let ev: Value = serde_json::from_str(data)
            .map_err(|e| malformed(format!("bad stream event ({e}): {}", quote(data))))?;
        self.apply_event(&ev, sink)
    }

    /// The reply once the stream ended: the terminal event's response, its `output` filled
    /// from the items streamed where it came without them.
    fn finish(self) -> Result<ModelResponse, ProviderError> {
        let Some(mut response) = self.last else {
            return Err(ProviderError::Transport {
                provider: NAME,
                message: "the stream ended before response.completed".into(),
            });
        };
        if response["output"].as_array().is_none_or(Vec::is_empty) {
            let mut items = self.items;
            // A call the stream left open (cut by the token limit) is an incomplete item.
            for c in self.open {
                let mut item = c.item;
                item["arguments"] = json!(c.arguments);
                item["status"] = json!("incomplete");
                items.push((c.index, item));
            }
            items.sort_by_key(|(i, _)| *i);
            response["output"] = Value::Array(items.into_iter().map(|(_, v)| v).collect());
        }
        let mut reply = read_response(&response)?;
        if reply.text.is_empty() {
            reply.text = self.text;
        }
        Ok(reply)
    }
}

/// Parses a whole recorded SSE text (for tests and replay).
pub fn parse_sse(text: &str, sink: &TextSink) -> Result<ModelResponse, ProviderError> {
    sse::parse_text::<StreamState>(text, sink)
}
