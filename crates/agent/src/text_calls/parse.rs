//! Tool calls a model wrote as text. A local model served without a tool-call parser
//! (llama.cpp without its template's tool support, vLLM without `--tool-call-parser`, many
//! Ollama templates) answers with the call in its reply's text, in its chat template's own
//! markup. An agent that opts in (`.text_tool_calls("auto")`) has such calls recovered here,
//! then validated and run like any structured call; a tagged call that cannot be read is
//! reported (the loop tells the model what was wrong), never taken for a final answer.
//!
//! The formats: Hermes and Qwen (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`, one
//! block per call), Mistral (`[TOOL_CALLS] [{"name": ..., "arguments": ...}]`, and v11's
//! `[TOOL_CALLS]name[ARGS]{...}`), Llama 3 (`<|python_tag|>{"name": ..., "parameters": ...}`,
//! or a bare JSON function object that is the whole reply and names an offered tool).

use kiln_core::model::CallArgs;
use kiln_core::model::text_calls::TextCallFormat;
use serde_json::Value;

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
    /// Markup announcing a call that cannot be read: what was wrong, for the model.
    Malformed(String),
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const MISTRAL_TAG: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const PYTHON_TAG: &str = "<|python_tag|>";
/// Llama's end-of-message tokens, which a server may leave in the text.
const LLAMA_ENDS: [&str; 3] = ["<|eom_id|>", "<|eot_id|>", "<|end_of_text|>"];

/// Searches `text` for calls in the formats `format` allows. `tools` are the names offered: a
/// bare JSON object counts as a call only when it names one of them (no markup says it is a
/// call); a tagged call with an unknown name is kept, for the loop's usual unknown-tool result.
pub fn recover(text: &str, format: TextCallFormat, tools: &[&str]) -> Found {
    if format == TextCallFormat::Off {
        return Found::Nothing;
    }
    if format.covers(TextCallFormat::Hermes) && text.contains(HERMES_OPEN) {
        return hermes(text);
    }
    if format.covers(TextCallFormat::Mistral)
        && let Some(at) = text.find(MISTRAL_TAG)
    {
        return mistral(&text[..at], &text[at + MISTRAL_TAG.len()..]);
    }
    if format.covers(TextCallFormat::Llama) {
        if let Some(at) = text.find(PYTHON_TAG) {
            return python_tag(&text[..at], &text[at + PYTHON_TAG.len()..]);
        }
        return bare_json(text, tools);
    }
    Found::Nothing
}

/// `<tool_call>{...}</tool_call>` blocks; the text between them is kept.
fn hermes(text: &str) -> Found {
    let (mut kept, mut calls) = (String::new(), Vec::new());
    let mut rest = text;
    let mut n = 0;
    while let Some(open) = rest.find(HERMES_OPEN) {
        kept.push_str(&rest[..open]);
        let after = &rest[open + HERMES_OPEN.len()..];
        // A reply cut before its closing tag still holds the call.
        let (inner, next) = match after.find(HERMES_CLOSE) {
            Some(close) => (&after[..close], &after[close + HERMES_CLOSE.len()..]),
            None => (after, ""),
        };
        n += 1;
        let parsed = serde_json::from_str::<Value>(inner.trim())
            .map_err(|e| format!("{HERMES_OPEN} {n} is not valid JSON ({e})"))
            .and_then(|v| calls_of(&v));
        match parsed {
            Ok(mut c) => calls.append(&mut c),
            Err(problem) => return malformed(&problem, HERMES_EXAMPLE),
        }
        rest = next;
    }
    kept.push_str(rest);
    found(&kept, calls)
}

const HERMES_EXAMPLE: &str = "<tool_call>{\"name\": \"TOOL\", \"arguments\": {...}}</tool_call>";
const MISTRAL_EXAMPLE: &str = "[TOOL_CALLS] [{\"name\": \"TOOL\", \"arguments\": {...}}]";
const LLAMA_EXAMPLE: &str = "<|python_tag|>{\"name\": \"TOOL\", \"parameters\": {...}}";

/// `[TOOL_CALLS] [...]` (a JSON list or object), or v11's `[TOOL_CALLS]name[ARGS]{...}`.
fn mistral(before: &str, after: &str) -> Found {
    let body = after.trim_start();
    let parsed = if body.starts_with('[') || body.starts_with('{') {
        json_values(body, "[TOOL_CALLS]").and_then(|(values, tail)| {
            let mut calls = Vec::new();
            for v in &values {
                calls.append(&mut calls_of(v)?);
            }
            Ok((calls, tail))
        })
    } else {
        mistral_v11(after).map(|calls| (calls, ""))
    };
    match parsed {
        Ok((calls, tail)) => found(&format!("{before}{tail}"), calls),
        Err(problem) => malformed(&problem, MISTRAL_EXAMPLE),
    }
}

/// `name[ARGS]{...}`, repeated with `[TOOL_CALLS]` between calls.
fn mistral_v11(after: &str) -> Result<Vec<TextCall>, String> {
    after
        .split(MISTRAL_TAG)
        .map(|part| {
            let (name, args) = part.split_once(MISTRAL_ARGS).ok_or_else(|| {
                "[TOOL_CALLS] is followed by neither JSON nor NAME[ARGS]{...}".to_string()
            })?;
            let name = name.split("[CALL_ID]").next().unwrap_or_default().trim();
            let args = serde_json::from_str::<Value>(args.trim())
                .map_err(|e| format!("the arguments of \"{name}\" are not valid JSON ({e})"))?;
            call_of(&serde_json::json!({"name": name, "arguments": args}))
        })
        .collect()
}

/// `<|python_tag|>` followed by one or more JSON function objects (`;` between them).
fn python_tag(before: &str, after: &str) -> Found {
    let mut body = after;
    for end in LLAMA_ENDS {
        body = body.split(end).next().unwrap_or_default();
    }
    let parsed = json_values(body, PYTHON_TAG).and_then(|(values, tail)| {
        let mut calls = Vec::new();
        for v in &values {
            calls.append(&mut calls_of(v)?);
        }
        Ok((calls, tail))
    });
    match parsed {
        Ok((calls, tail)) => found(&format!("{before}{tail}"), calls),
        Err(problem) => malformed(&problem, LLAMA_EXAMPLE),
    }
}

/// The whole reply as one JSON function object naming an offered tool (Llama 3's JSON form).
fn bare_json(text: &str, tools: &[&str]) -> Found {
    let mut body = text.trim();
    for end in LLAMA_ENDS {
        body = body.trim_end_matches(end).trim_end();
    }
    let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(body) else {
        return Found::Nothing;
    };
    let names_tool = v
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| tools.contains(&n));
    let has_args = v.get("parameters").is_some() || v.get("arguments").is_some();
    match call_of(&v) {
        Ok(call) if names_tool && has_args => found("", vec![call]),
        _ => Found::Nothing,
    }
}

/// JSON values one after another (whitespace or `;` between them), and the text after them.
fn json_values<'t>(body: &'t str, tag: &str) -> Result<(Vec<Value>, &'t str), String> {
    let mut values = Vec::new();
    let mut rest = body.trim_start();
    while rest.starts_with('[') || rest.starts_with('{') {
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => values.push(v),
            Some(Err(e)) => return Err(format!("the JSON after {tag} is not valid ({e})")),
            None => break,
        }
        rest = rest[stream.byte_offset()..].trim_start();
        rest = rest.strip_prefix(';').unwrap_or(rest).trim_start();
    }
    if values.is_empty() {
        return Err(format!("{tag} is not followed by a JSON call"));
    }
    Ok((values, rest))
}

/// The calls of one JSON value: a call object, or a list of them.
fn calls_of(v: &Value) -> Result<Vec<TextCall>, String> {
    match v {
        Value::Array(items) => items.iter().map(call_of).collect(),
        other => call_of(other).map(|c| vec![c]),
    }
}

/// `{"name": ..., "arguments" | "parameters": {...} | "JSON text"}`.
fn call_of(v: &Value) -> Result<TextCall, String> {
    let Value::Object(map) = v else {
        return Err(format!("a call must be a JSON object, not {}", kind(v)));
    };
    let name = match map.get("name") {
        Some(Value::String(n)) if !n.trim().is_empty() => n.trim().to_string(),
        _ => return Err("a call has no \"name\" string".to_string()),
    };
    let args = match map.get("arguments").or_else(|| map.get("parameters")) {
        None | Some(Value::Null) => CallArgs::Parsed(Value::Object(Default::default())),
        Some(Value::String(text)) => CallArgs::from_text(text),
        Some(obj @ Value::Object(_)) => CallArgs::Parsed(obj.clone()),
        Some(other) => {
            return Err(format!(
                "the arguments of \"{name}\" must be a JSON object, not {}",
                kind(other)
            ));
        }
    };
    Ok(TextCall { name, args })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn found(text: &str, calls: Vec<TextCall>) -> Found {
    if calls.is_empty() {
        return Found::Nothing;
    }
    Found::Calls {
        text: text.trim().to_string(),
        calls,
    }
}

fn malformed(problem: &str, example: &str) -> Found {
    Found::Malformed(format!(
        "Your tool call could not be read: {problem}. No tool ran. Write each call as {example}."
    ))
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
