//! Calls after a template's own marker tokens: Mistral's `[TOOL_CALLS]`, Llama's
//! `<|python_tag|>` (3.1) and `<|python_start|>` (4), DeepSeek's `<｜tool▁calls▁begin｜>`.

use super::call::{Found, TextCall, call_of, calls_of_all, found, json_values, malformed};
use super::python;
use serde_json::Value;

pub(crate) const MISTRAL_TAG: &str = "[TOOL_CALLS]";
const MISTRAL_ARGS: &str = "[ARGS]";
const PYTHON_TAG: &str = "<|python_tag|>";
const PYTHON_START: &str = "<|python_start|>";
const PYTHON_END: &str = "<|python_end|>";
/// Llama's end-of-message tokens, which a server may leave in the text.
const LLAMA_ENDS: [&str; 3] = ["<|eom_id|>", "<|eot_id|>", "<|end_of_text|>"];

const MISTRAL_EXAMPLE: &str = "[TOOL_CALLS] [{\"name\": \"TOOL\", \"arguments\": {...}}]";
const LLAMA_EXAMPLE: &str = "<|python_tag|>{\"name\": \"TOOL\", \"parameters\": {...}}";
const LLAMA4_EXAMPLE: &str = "<|python_start|>[TOOL(arg=value)]<|python_end|>";
const DEEPSEEK_EXAMPLE: &str = "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>TOOL\n```json\n{...}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";

/// `[TOOL_CALLS] [...]` (a JSON list or object), or v11's `[TOOL_CALLS]name[ARGS]{...}`.
pub(crate) fn mistral(before: &str, after: &str) -> Found {
    let body = after.trim_start();
    let parsed = if body.starts_with(['[', '{']) {
        json_values(body, MISTRAL_TAG).and_then(|(values, tail)| Ok((calls_of_all(&values)?, tail)))
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

/// Llama's marked calls: `<|python_tag|>` then JSON function objects (`;` between them), or
/// `<|python_start|>[name(arg=value), ...]<|python_end|>`. None without either marker.
pub(crate) fn llama(text: &str) -> Option<Found> {
    if let Some(at) = text.find(PYTHON_TAG) {
        return Some(python_tag(&text[..at], &text[at + PYTHON_TAG.len()..]));
    }
    let at = text.find(PYTHON_START)?;
    let after = &text[at + PYTHON_START.len()..];
    let (body, tail) = after.split_once(PYTHON_END).unwrap_or((after, ""));
    Some(match python::calls(body) {
        Ok(calls) => found(&format!("{}{tail}", &text[..at]), calls),
        Err(problem) => malformed(&problem, LLAMA4_EXAMPLE),
    })
}

/// After `<|python_tag|>`: JSON function objects, or a built-in tool's
/// `NAME.call(arg=value)`.
fn python_tag(before: &str, after: &str) -> Found {
    let mut body = after;
    for end in LLAMA_ENDS {
        body = body.split(end).next().unwrap_or_default();
    }
    if !body.trim_start().starts_with(['{', '[']) {
        return match python::calls(body) {
            Ok(mut calls) => {
                for call in &mut calls {
                    call.name = call.name.trim_end_matches(".call").to_string();
                }
                found(before, calls)
            }
            Err(problem) => malformed(&problem, LLAMA_EXAMPLE),
        };
    }
    let parsed =
        json_values(body, PYTHON_TAG).and_then(|(values, tail)| Ok((calls_of_all(&values)?, tail)));
    match parsed {
        Ok((calls, tail)) => found(&format!("{before}{tail}"), calls),
        Err(problem) => malformed(&problem, LLAMA_EXAMPLE),
    }
}

/// How DeepSeek's templates open the calls: the token itself, and the spellings distilled
/// models write it in (as llama.cpp's DeepSeek R1 parser accepts them).
const DEEPSEEK_BEGINS: [&str; 5] = [
    "<｜tool▁calls▁begin｜>",
    "<｜tool_calls_begin｜>",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
];
const DEEPSEEK_CALL: &str = "<｜tool▁call▁begin｜>";
const DEEPSEEK_SEP: &str = "<｜tool▁sep｜>";
const DEEPSEEK_CALL_END: &str = "<｜tool▁call▁end｜>";
const DEEPSEEK_END: &str = "<｜tool▁calls▁end｜>";

/// DeepSeek's calls: V3 and R1 write `function<｜tool▁sep｜>NAME` then the arguments in a
/// `json` fence, V3.1 `NAME<｜tool▁sep｜>{...}`; each between
/// `<｜tool▁call▁begin｜>` and `<｜tool▁call▁end｜>`, all of them between
/// `<｜tool▁calls▁begin｜>` and `<｜tool▁calls▁end｜>`. None without those tokens.
pub(crate) fn deepseek(text: &str) -> Option<Found> {
    let (at, open) = DEEPSEEK_BEGINS
        .iter()
        .chain([&DEEPSEEK_CALL])
        .filter_map(|tag| text.find(tag).map(|at| (at, tag.len())))
        .min_by_key(|(at, _)| *at)?;
    let after = &text[at + open..];
    let (region, tail) = after.split_once(DEEPSEEK_END).unwrap_or((after, ""));
    // The first call's own opening token may be missing (R1), or be the token found above.
    let parsed: Result<Vec<TextCall>, String> = region
        .split(DEEPSEEK_CALL)
        .map(|part| part.trim().trim_end_matches(DEEPSEEK_CALL_END).trim())
        .filter(|part| !part.is_empty())
        .map(deepseek_call)
        .collect();
    let tail = super::call::strip_ends(tail);
    Some(match parsed {
        Ok(calls) if calls.is_empty() => malformed(
            "<｜tool▁calls▁begin｜> is followed by no call",
            DEEPSEEK_EXAMPLE,
        ),
        Ok(calls) => found(&format!("{}{tail}", &text[..at]), calls),
        Err(problem) => malformed(&problem, DEEPSEEK_EXAMPLE),
    })
}

/// One call: `TYPE<｜tool▁sep｜>NAME` then a `json` fence holding the arguments, or
/// `NAME<｜tool▁sep｜>{...}`.
fn deepseek_call(part: &str) -> Result<TextCall, String> {
    let (head, rest) = part
        .split_once(DEEPSEEK_SEP)
        .ok_or("a call has no <｜tool▁sep｜> between its name and its arguments")?;
    let (name, args) = match rest.split_once('\n') {
        Some((name, body)) if body.trim_start().starts_with("```") => {
            let body = body.trim_start().trim_start_matches('`');
            let body = body.split_once('\n').map_or("", |(_, b)| b);
            let body = body.trim_end().trim_end_matches('`');
            (name.trim(), body.trim())
        }
        _ => (head.trim(), rest.trim()),
    };
    let args = serde_json::from_str::<Value>(args)
        .map_err(|e| format!("the arguments of \"{name}\" are not valid JSON ({e})"))?;
    call_of(&serde_json::json!({"name": name, "arguments": args}))
}
