//! One message's wire messages written straight from its fields: the same JSON text as
//! building them as values (`wire_messages`) and writing those (`rendered::joined`), without
//! the values, each string copied into them and each key hashed into a map. Every message of
//! a run is rendered this way once; the tests hold the two ways equal.

use super::{ID, wire_messages};
use crate::{Message, rendered};
use serde::Serialize;
use std::borrow::Cow;

/// A user's or a tool's text message.
#[derive(Serialize)]
struct Said<'a> {
    role: &'static str,
    content: &'a str,
}

/// An assistant's message: its text (`null` when it only calls tools) and its calls.
#[derive(Serialize)]
struct Assistant<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<Call<'a>>>,
}

#[derive(Serialize)]
struct Call<'a> {
    id: Cow<'a, str>,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    arguments: String,
}

/// A tool's result, answering one call.
#[derive(Serialize)]
struct Answer<'a> {
    role: &'static str,
    tool_call_id: Cow<'a, str>,
    content: &'a str,
}

/// The JSON text of `m`'s wire messages, comma-joined.
pub(super) fn part(m: &Message) -> String {
    let mut out = Vec::new();
    match m {
        Message::User {
            content,
            attachments,
        } => {
            if !attachments.is_empty() {
                // Attachments become content parts: rare enough to take the values' way.
                let mut wire = Vec::new();
                wire_messages(m, &mut wire);
                return rendered::joined(&wire);
            }
            write(
                &mut out,
                &Said {
                    role: "user",
                    content,
                },
            );
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let calls = (!tool_calls.is_empty()).then(|| {
                tool_calls
                    .iter()
                    .map(|c| Call {
                        id: ID.wire_id(&c.id),
                        kind: "function",
                        function: Function {
                            name: &c.name,
                            arguments: c.args.to_text(),
                        },
                    })
                    .collect()
            });
            let only_calls = content.is_empty() && calls.is_some();
            let assistant = Assistant {
                role: "assistant",
                content: (!only_calls).then_some(content.as_str()),
                tool_calls: calls,
            };
            write(&mut out, &assistant);
        }
        Message::Tool { results } => {
            for r in results {
                if !out.is_empty() {
                    out.push(b',');
                }
                let answer = Answer {
                    role: "tool",
                    tool_call_id: ID.wire_id(&r.call_id),
                    content: &r.content,
                };
                write(&mut out, &answer);
            }
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Appends `v` as JSON (borrowed text and owned strings serialize without fail).
fn write(out: &mut Vec<u8>, v: &impl Serialize) {
    let _ = serde_json::to_writer(out, v);
}
