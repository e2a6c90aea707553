//! What every shape of a call written as text comes down to: a name and its arguments (read
//! from JSON, or from a template's own notation), what a reply held, and the tools offered,
//! which a call with no markup around it must name.

use kiln_core::model::CallArgs;
use serde_json::{Map, Value};

/// One call recovered from text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    /// The tool's name as written.
    pub name: String,
    /// Its arguments (an argument string that is not JSON stays invalid, for validation to
    /// report).
    pub args: CallArgs,
}

/// What a reply's text held.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// No call written as text: the text is the answer.
    Nothing,
    /// Calls, and the text around them (trimmed), which stays the assistant's text.
    Calls {
        /// The reply's text without the calls.
        text: String,
        /// The calls in the order written.
        calls: Vec<TextCall>,
    },
    /// A call that cannot be read: what was wrong, for the model.
    Malformed(String),
}

/// A tool the model was offered: its name and the JSON Schema of its arguments.
#[derive(Debug, Clone, Copy)]
pub struct Offered<'t> {
    /// The tool's name.
    pub name: &'t str,
    /// Its arguments' schema (`{"type": "object", "properties": {...}}`).
    pub schema: &'t Value,
}

/// Whether `name` is one of the tools offered.
pub(crate) fn is_offered(tools: &[Offered], name: &str) -> bool {
    tools.iter().any(|t| t.name == name)
}

/// Whether the argument `param` of `tool` takes text as written: declared a string, or not
/// declared with a type at all. Other values are read as JSON (numbers, lists, objects).
pub(crate) fn takes_text(tools: &[Offered], tool: &str, param: &str) -> bool {
    let Some(t) = tools.iter().find(|t| t.name == tool) else {
        return true;
    };
    let declared = &t.schema["properties"][param];
    let mut types: Vec<&str> = Vec::new();
    match &declared["type"] {
        Value::String(s) => types.push(s),
        Value::Array(list) => types.extend(list.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = declared[key].as_array() {
            types.extend(options.iter().filter_map(|o| o["type"].as_str()));
        }
    }
    types.is_empty() || types.contains(&"string")
}

/// Whether `text` starts a JSON call naming an offered tool (`{"name": "TOOL"`), for telling a
/// broken call from prose that is not one.
pub(crate) fn names_offered(text: &str, tools: &[Offered]) -> bool {
    text.match_indices("\"name\"").any(|(at, key)| {
        let rest = text[at + key.len()..].trim_start();
        let Some(rest) = rest.strip_prefix(':') else {
            return false;
        };
        let rest = rest.trim_start();
        tools.iter().any(|t| {
            rest.strip_prefix('"')
                .and_then(|r| r.strip_prefix(t.name))
                .is_some_and(|r| r.starts_with('"'))
        })
    })
}

/// JSON values one after another (whitespace, `,` or `;` between them) and the text after
/// them; none when `body` does not start with one.
pub(crate) fn json_seq(body: &str) -> Result<(Vec<Value>, &str), serde_json::Error> {
    let mut values = Vec::new();
    let mut rest = body.trim_start();
    while rest.starts_with(['[', '{']) {
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => values.push(v),
            Some(Err(e)) => return Err(e),
            None => break,
        }
        rest = rest[stream.byte_offset()..].trim_start();
        rest = rest.strip_prefix([';', ',']).unwrap_or(rest).trim_start();
    }
    Ok((values, rest))
}

/// JSON values after a tag (`<|python_tag|>`, `[TOOL_CALLS]`), and the text after them.
pub(crate) fn json_values<'t>(body: &'t str, tag: &str) -> Result<(Vec<Value>, &'t str), String> {
    let (values, rest) =
        json_seq(body).map_err(|e| format!("the JSON after {tag} is not valid ({e})"))?;
    if values.is_empty() {
        return Err(format!("{tag} is not followed by a JSON call"));
    }
    Ok((values, rest))
}

/// The calls of JSON values: call objects, or lists of them.
pub(crate) fn calls_of_all(values: &[Value]) -> Result<Vec<TextCall>, String> {
    let mut calls = Vec::new();
    for v in values {
        calls.append(&mut calls_of(v)?);
    }
    Ok(calls)
}

/// The calls of one JSON value: a call object, or a list of them.
pub(crate) fn calls_of(v: &Value) -> Result<Vec<TextCall>, String> {
    match v {
        Value::Array(items) => items.iter().map(call_of).collect(),
        other => call_of(other).map(|c| vec![c]),
    }
}

/// `{"name": ..., "arguments" | "parameters": {...} | "JSON text"}`.
pub(crate) fn call_of(v: &Value) -> Result<TextCall, String> {
    let Value::Object(map) = v else {
        return Err(format!("a call must be a JSON object, not {}", kind(v)));
    };
    let name = match map.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => return Err("a call has no \"name\" string".to_string()),
    };
    let args = map.get("arguments").or_else(|| map.get("parameters"));
    Ok(TextCall {
        args: args_of(&name, args)?,
        name,
    })
}

/// A call's arguments: an object, JSON text (kept invalid when it is not JSON), or none.
pub(crate) fn args_of(name: &str, args: Option<&Value>) -> Result<CallArgs, String> {
    match args {
        None | Some(Value::Null) => Ok(CallArgs::parsed(Value::Object(Map::new()))),
        Some(Value::String(text)) => Ok(CallArgs::from_text(text)),
        Some(obj @ Value::Object(_)) => Ok(CallArgs::parsed(obj.clone())),
        Some(other) => Err(format!(
            "the arguments of \"{name}\" must be a JSON object, not {}",
            kind(other)
        )),
    }
}

/// A JSON object taken for a call where no markup says it is one: it names an offered tool,
/// holds its arguments (`arguments` or `parameters`) and nothing else but `type` and `id`.
/// None for any other value (an answer that is JSON); an error for such a call whose
/// arguments cannot be read.
pub(crate) fn bare_call(v: &Value, tools: &[Offered]) -> Option<Result<TextCall, String>> {
    let map = v.as_object()?;
    let name = map.get("name")?.as_str()?;
    let known = ["name", "arguments", "parameters", "type", "id"];
    let has_args = map.contains_key("arguments") || map.contains_key("parameters");
    let only_known = map.keys().all(|k| known.contains(&k.as_str()));
    (is_offered(tools, name.trim()) && has_args && only_known).then(|| call_of(v))
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Calls and the text around them (less a fence the calls were taken out of, left empty);
/// nothing when there are no calls.
pub(crate) fn found(text: &str, calls: Vec<TextCall>) -> Found {
    if calls.is_empty() {
        return Found::Nothing;
    }
    let mut kept = String::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let body_at = after.find('\n').map_or(after.len(), |i| i + 1);
        let Some(close) = after[body_at..].find("```").map(|i| body_at + i) else {
            break;
        };
        let fence_end = open + 3 + close + 3;
        let empty = after[body_at..close].trim().is_empty();
        kept.push_str(&rest[..if empty { open } else { fence_end }]);
        rest = &rest[fence_end..];
    }
    kept.push_str(rest);
    Found::Calls {
        text: kept.trim().to_string(),
        calls,
    }
}

/// What the model is told of a call it wrote that could not be read.
pub(crate) fn malformed(problem: &str, example: &str) -> Found {
    Found::Malformed(format!(
        "Your tool call could not be read: {problem}. No tool ran. Write each call as {example}."
    ))
}

/// End-of-turn tokens a server may leave at the end of a reply's text.
const ENDS: [&str; 6] = [
    "<|eom_id|>",
    "<|eot_id|>",
    "<|end_of_text|>",
    "<|im_end|>",
    "<end_of_turn>",
    "<｜end▁of▁sentence｜>",
];

/// `text` without the end-of-turn tokens a server left after it.
pub(crate) fn strip_ends(text: &str) -> &str {
    let mut body = text.trim_end();
    while let Some(end) = ENDS.iter().find(|e| body.ends_with(**e)) {
        body = body[..body.len() - end.len()].trim_end();
    }
    body
}

/// The next of several markers in a text, from a point that only moves forward: each marker
/// is searched for again only once the point has passed where it was found, so finding every
/// marker of a long reply stays linear.
pub(crate) struct Markers<'t> {
    text: &'t str,
    tags: &'t [&'t str],
    next: Vec<Option<usize>>,
}

impl<'t> Markers<'t> {
    pub(crate) fn new(text: &'t str, tags: &'t [&'t str]) -> Self {
        let next = tags.iter().map(|t| text.find(t)).collect();
        Markers { text, tags, next }
    }

    /// The first marker at or after `from`: where it is, and which of the tags it is.
    pub(crate) fn next_from(&mut self, from: usize) -> Option<(usize, usize)> {
        for (i, found) in self.next.iter_mut().enumerate() {
            if found.is_some_and(|at| at < from) {
                *found = self.text[from..].find(self.tags[i]).map(|at| from + at);
            }
        }
        (self.next.iter().enumerate())
            .filter_map(|(i, at)| at.map(|at| (at, i)))
            .min()
    }
}
