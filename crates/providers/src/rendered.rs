//! Request bodies rendered incrementally, for every wire format. The conversation only grows
//! within a run, so each message is rendered once, into a wire format's *part* (the JSON text
//! of what it becomes on the wire), and later rounds copy the parts instead of rendering the
//! whole transcript again; the tool definitions are rendered once while the tools offered stay
//! the same. A wire format says ([`Wire`]) how a message becomes a part, how parts join into
//! the message list and what the body around them is; [`Rendered`] keeps the parts and puts
//! them into that body.

use super::{Message, ModelRequest, ToolDef};
use std::sync::Mutex;

/// The parts of one provider's conversation, one per message (a provider serves one run), and
/// the message list they make, kept as text up to the last wire message (which the next
/// message may still join). A part is reused only while its message is unchanged: the
/// messages the request promises unchanged ([`ModelRequest::unchanged_prefix`]) are not looked
/// at again (comparing them all each round made every round cost as much as the whole
/// conversation), the rest are compared.
pub struct Rendered<P>(Mutex<Parts<P>>);

impl<P> Default for Rendered<P> {
    fn default() -> Self {
        Rendered(Mutex::new(Parts {
            messages: Vec::new(),
            parts: Vec::new(),
            list: String::new(),
            closed: Vec::new(),
            tools: None,
            last_len: 0,
        }))
    }
}

struct Parts<P> {
    /// The messages rendered, as they were.
    messages: Vec<Message>,
    /// What each rendered to.
    parts: Vec<P>,
    /// The list items of every wire message but the last, comma-joined.
    list: String,
    /// Where each wire message in `list` ends: the parts it holds end at `.0`, its text at `.1`.
    closed: Vec<(usize, usize)>,
    /// The tools offered last, and the JSON text of their definitions.
    tools: Option<(Vec<ToolDef>, String)>,
    /// The length of the last body: the next one is about as long.
    last_len: usize,
}

impl<P> Parts<P> {
    /// Forgets the parts from the `n`th on, and the list text of what held them.
    fn truncate(&mut self, n: usize) {
        self.messages.truncate(n);
        self.parts.truncate(n);
        while self.closed.last().is_some_and(|&(end, _)| end > n) {
            self.closed.pop();
        }
        self.list
            .truncate(self.closed.last().map_or(0, |&(_, len)| len));
    }

    /// The first part not in `list`.
    fn open(&self) -> usize {
        self.closed.last().map_or(0, |&(end, _)| end)
    }
}

/// How a wire format renders a request: what a [`Rendered`] needs to know of it.
pub trait Wire {
    /// What one message renders to.
    type Part;
    /// One message rendered.
    fn part(&self, m: &Message) -> Self::Part;
    /// Whether `next` goes into the same wire message as `prev` (Anthropic merges a run of one
    /// role into one message); by default each message is its own.
    fn joins(&self, prev: &Self::Part, next: &Self::Part) -> bool {
        let _ = (prev, next);
        false
    }
    /// Writes the list items of one run of parts that join into `out` (with [`push_item`]).
    fn write(&self, out: &mut String, run: &[Self::Part]);
    /// The list items before the messages' (a system message), if any.
    fn lead(&self) -> Option<String> {
        None
    }
    /// The JSON of the tool definitions.
    fn tools(&self, tools: &[ToolDef]) -> serde_json::Value;
    /// The body with an empty message list and `tools` as the tool definitions (none: no
    /// tools offered).
    fn frame(&self, tools: Option<serde_json::Value>) -> serde_json::Value;
    /// The key of the message list in [`Wire::frame`] (OpenAI Responses' is `input`, Gemini's `contents`); it must be the
    /// frame's first key holding a list.
    fn list_key(&self) -> &'static str {
        "messages"
    }
}

impl<P> Rendered<P> {
    /// The body of `req` as sent over `wire`, rendering only the messages (and tools) that
    /// were not rendered before: besides them, a round costs copying the bytes.
    pub fn render<W: Wire<Part = P>>(&self, req: &ModelRequest<'_>, wire: &W) -> Vec<u8> {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let kept = &mut *guard;
        let promised = req.unchanged_prefix.min(kept.messages.len());
        let messages = req.messages.get(promised..).unwrap_or_default();
        for (i, m) in (promised..).zip(messages) {
            if kept.messages.get(i) != Some(m) {
                kept.truncate(i);
                kept.parts.push(wire.part(m));
                kept.messages.push(m.clone());
            }
        }
        kept.truncate(req.messages.len());
        // Each run of parts that a later part does not join is a whole wire message: its text
        // goes into the list once.
        let mut start = kept.open();
        for next in start + 1..kept.parts.len() {
            if !wire.joins(&kept.parts[next - 1], &kept.parts[next]) {
                wire.write(&mut kept.list, &kept.parts[start..next]);
                kept.closed.push((next, kept.list.len()));
                start = next;
            }
        }
        // No tools this time keeps the last ones for the next request that offers them again.
        let tools = &mut kept.tools;
        if !req.tools.is_empty() && tools.as_ref().is_none_or(|(defs, _)| *defs != req.tools) {
            *tools = Some((req.tools.clone(), json_text(&wire.tools(&req.tools))));
        }
        let tools = tools
            .as_ref()
            .filter(|_| !req.tools.is_empty())
            .map(|(_, text)| text.as_str());
        let frame = json_text(&wire.frame(tools.map(|_| serde_json::Value::Null)));
        let messages = |out: &mut String| {
            if let Some(lead) = wire.lead() {
                push_item(out, &lead);
            }
            push_item(out, &kept.list);
            wire.write(out, &kept.parts[start..]);
        };
        let list = format!("\"{}\":[]", wire.list_key());
        let bytes = splice(&frame, &list, kept.last_len, messages, tools);
        kept.last_len = bytes.len();
        bytes
    }
}

/// `v` as compact JSON text, written straight into bytes (not through `Display`'s formatter).
fn json_text(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Where the tool definitions are in a body's frame.
const TOOLS: &str = "\"tools\":null";

/// The body as sent: `frame` is the JSON text of the body with an empty message list (`list`,
/// `"messages":[]` or another key's) and, when tools are offered, `null` in their place;
/// `messages` writes the list's contents and `tools` is the definitions' text.
///
/// The first `list` of the frame is the key itself, and the first `"tools":null` after
/// it too: before them stand only the frame's own keys, numbers and strings, and a string
/// cannot hold a `"` that is not escaped, so never `s":`.
fn splice(
    frame: &str,
    list: &str,
    capacity: usize,
    messages: impl FnOnce(&mut String),
    tools: Option<&str>,
) -> Vec<u8> {
    let mut out = String::with_capacity(capacity.max(frame.len()) + 256);
    let (head, rest) = match frame.find(list) {
        Some(at) => frame.split_at(at + list.len() - 1),
        None => (frame, ""),
    };
    out.push_str(head);
    messages(&mut out);
    match (tools, rest.find(TOOLS)) {
        (Some(text), Some(at)) => {
            out.push_str(&rest[..at + TOOLS.len() - 4]);
            out.push_str(text);
            out.push_str(&rest[at + TOOLS.len()..]);
        }
        _ => out.push_str(rest),
    }
    out.into_bytes()
}

/// Appends `text` (one or more comma-joined items) to a JSON list being written in `out` (or
/// to the text of items alone, when `out` starts empty), after a comma unless it is the first
/// item; empty text is no item.
pub fn push_item(out: &mut String, text: &str) {
    if !text.is_empty() {
        separate(out);
        out.push_str(text);
    }
}

/// Writes parts that are the JSON text of list items, one after another: [`Wire::write`] for
/// wires where a message is wire messages of its own (OpenAI's, Ollama's).
pub fn write_items(out: &mut String, run: &[String]) {
    for part in run {
        push_item(out, part);
    }
}

/// Puts the comma before the next item into `out`, unless it is the first.
pub fn separate(out: &mut String) {
    if !(out.is_empty() || out.ends_with('[')) {
        out.push(',');
    }
}

/// The JSON text of `values`, comma-joined: the part of a message that is several wire
/// messages (or blocks).
pub fn joined(values: &[serde_json::Value]) -> String {
    // Written straight into bytes: `Display` goes through a formatter for every fragment.
    let mut out = Vec::new();
    for v in values {
        if !out.is_empty() {
            out.push(b',');
        }
        // A `Value` always serializes (its keys are text), and as UTF-8.
        let _ = serde_json::to_writer(&mut out, v);
    }
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests;
