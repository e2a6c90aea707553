//! Calls in tags, as Hermes and Qwen templates write them: `<tool_call>{json}</tool_call>`
//! (Hermes 2 Pro, Qwen 2.5 and 3), `<tools>...</tools>` holding one or more JSON calls
//! (Qwen2.5-Coder), and `<function=NAME>` with `<parameter=KEY>value</parameter>` inside
//! (Qwen3-Coder, in or out of a `<tool_call>`) or JSON arguments (Functionary, Llama 3.1).

use super::call::{
    Found, Markers, Offered, TextCall, calls_of_all, found, json_seq, malformed, takes_text,
};
use kiln_core::model::CallArgs;
use serde_json::{Map, Value};

/// The tags a block of calls is written in, each with its closing tag.
const BLOCKS: [(&str, &str); 2] = [("<tool_call>", "</tool_call>"), ("<tools>", "</tools>")];
const FUNCTION: &str = "<function=";
const FUNCTION_NAMED: &str = "<function name=\"";
const FUNCTION_CLOSE: &str = "</function>";
const PARAMETER: &str = "<parameter=";
const PARAMETER_CLOSE: &str = "</parameter>";

const EXAMPLE: &str = "<tool_call>{\"name\": \"TOOL\", \"arguments\": {...}}</tool_call>";

/// Whether `text` holds a tag this module reads.
pub(crate) fn present(text: &str) -> bool {
    BLOCKS.iter().any(|(open, _)| text.contains(open))
        || text.contains(FUNCTION)
        || text.contains(FUNCTION_NAMED)
}

/// Every tagged call in `text`, the text between them kept; a block that cannot be read makes
/// the whole reply malformed.
pub(crate) fn recover(text: &str, tools: &[Offered]) -> Found {
    const TAGS: [&str; 4] = [BLOCKS[0].0, BLOCKS[1].0, FUNCTION, FUNCTION_NAMED];
    let mut markers = Markers::new(text, &TAGS);
    let (mut kept, mut calls) = (String::new(), Vec::new());
    let (mut at, mut n) = (0, 0);
    while let Some((start, which)) = markers.next_from(at) {
        kept.push_str(&text[at..start]);
        let from = &text[start..];
        let (parsed, used) = match BLOCKS.get(which) {
            Some((open, close)) => {
                let after = &from[open.len()..];
                // A reply cut before its closing tag still holds the call.
                let (inner, used) = match after.find(close) {
                    Some(end) => (&after[..end], open.len() + end + close.len()),
                    None => (after, from.len()),
                };
                // `<tools>` around prose (an answer about XML) is text.
                if *open == "<tools>" && !inner.trim_start().starts_with(['{', '[']) {
                    kept.push_str(&from[..used]);
                    at = start + used;
                    continue;
                }
                n += 1;
                (block(inner, open, n, tools), used)
            }
            None => function(from, tools).map_or_else(
                |e| (Err(e), from.len()),
                |(call, used)| (Ok(vec![call]), used),
            ),
        };
        match parsed {
            Ok(mut c) => calls.append(&mut c),
            Err(problem) => return malformed(&problem, EXAMPLE),
        }
        at = start + used;
    }
    kept.push_str(&text[at..]);
    found(&kept, calls)
}

/// The calls of one block: JSON calls (a fence around them dropped), or `<function=...>`.
fn block(inner: &str, tag: &str, n: usize, tools: &[Offered]) -> Result<Vec<TextCall>, String> {
    let body = unfence(inner.trim());
    if body.starts_with("<function") {
        let mut calls = Vec::new();
        let mut rest = body;
        while !rest.trim().is_empty() {
            let (call, used) = function(rest.trim_start(), tools)?;
            calls.push(call);
            rest = &rest.trim_start()[used..];
        }
        return Ok(calls);
    }
    let not_json = |e: &dyn std::fmt::Display| format!("{tag} {n} is not valid JSON ({e})");
    let (values, tail) = json_seq(body).map_err(|e| not_json(&e))?;
    if values.is_empty() || !tail.is_empty() {
        // Parse it whole for serde's own words on what is wrong.
        return match serde_json::from_str::<Value>(body) {
            Err(e) => Err(not_json(&e)),
            Ok(_) => Err(format!("{tag} {n} holds no call")),
        };
    }
    calls_of_all(&values)
}

/// `text` without a Markdown fence around it (```` ```json ... ``` ````).
fn unfence(text: &str) -> &str {
    let Some(after) = text.strip_prefix("```") else {
        return text;
    };
    let body = after.split_once('\n').map_or("", |(_, b)| b);
    body.trim_end().strip_suffix("```").unwrap_or(body).trim()
}

/// `<function=NAME>` (or `<function name="NAME">`) then JSON arguments or `<parameter=...>`
/// blocks, up to `</function>`: the call, and how much of `text` it took.
fn function(text: &str, tools: &[Offered]) -> Result<(TextCall, usize), String> {
    let (name, body_at) = if let Some(after) = text.strip_prefix(FUNCTION) {
        let end = after.find('>').ok_or("<function= has no closing >")?;
        (after[..end].trim(), FUNCTION.len() + end + 1)
    } else {
        let after = text
            .strip_prefix(FUNCTION_NAMED)
            .ok_or("expected <function=NAME>")?;
        let end = after
            .find("\">")
            .ok_or("<function name=\"...\" has no closing \">")?;
        (after[..end].trim(), FUNCTION_NAMED.len() + end + 2)
    };
    if name.is_empty() {
        return Err("a <function=...> tag names no function".into());
    }
    let after = &text[body_at..];
    let (body, used) = match after.find(FUNCTION_CLOSE) {
        Some(end) => (&after[..end], body_at + end + FUNCTION_CLOSE.len()),
        None => (after, text.len()),
    };
    let body = body.trim();
    let args = if body.is_empty() {
        CallArgs::parsed(Value::Object(Map::new()))
    } else if body.starts_with('{') {
        let v = serde_json::from_str::<Value>(body)
            .map_err(|e| format!("the arguments of \"{name}\" are not valid JSON ({e})"))?;
        super::call::args_of(name, Some(&v))?
    } else {
        CallArgs::parsed(Value::Object(parameters(name, body, tools)?))
    };
    let call = TextCall {
        name: name.to_string(),
        args,
    };
    Ok((call, used))
}

/// `<parameter=KEY>value</parameter>` blocks: each value as written for a text argument, read
/// as JSON for one declared otherwise (a number, a list).
fn parameters(tool: &str, body: &str, tools: &[Offered]) -> Result<Map<String, Value>, String> {
    let mut args = Map::new();
    let mut rest = body;
    while let Some(at) = rest.find(PARAMETER) {
        if !rest[..at].trim().is_empty() {
            return Err(format!(
                "the call of \"{tool}\" has text outside its <parameter=...> tags"
            ));
        }
        let after = &rest[at + PARAMETER.len()..];
        let end = after.find('>').ok_or("<parameter= has no closing >")?;
        let key = after[..end].trim();
        let after = &after[end + 1..];
        // A missing </parameter> ends at the next parameter.
        let stop = [after.find(PARAMETER_CLOSE), after.find(PARAMETER)];
        let stop = stop.into_iter().flatten().min().unwrap_or(after.len());
        let raw = after[..stop].strip_prefix('\n').unwrap_or(&after[..stop]);
        let raw = raw.strip_suffix('\n').unwrap_or(raw);
        let value = if takes_text(tools, tool, key) {
            Value::String(raw.to_string())
        } else {
            serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.to_string()))
        };
        args.insert(key.to_string(), value);
        rest = &after[stop..];
        rest = rest.strip_prefix(PARAMETER_CLOSE).unwrap_or(rest);
    }
    if args.is_empty() || !rest.trim().is_empty() {
        return Err(format!(
            "the call of \"{tool}\" is neither JSON nor <parameter=NAME>value</parameter>"
        ));
    }
    Ok(args)
}
