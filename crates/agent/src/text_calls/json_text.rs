//! JSON calls with no markup around them, as models write them when their template's own
//! markup is not used (Qwen2.5-Coder behind a server without its tool parser, Llama 3's and
//! Gemma 3's JSON form): the whole reply one call object (or a list of them), a ```` ```json ````
//! fence holding calls, or call objects each standing on lines of their own (one call per
//! line). No markup says these are calls, so each must name an offered tool and hold its
//! arguments (`call::bare_call`); JSON that is not such a call stays the answer.

use super::call::{
    Found, Offered, TextCall, bare_call, found, json_seq, malformed, names_offered, strip_ends,
};
use serde_json::Value;
use std::ops::Range;

const EXAMPLE: &str = "{\"name\": \"TOOL\", \"arguments\": {...}}, one call a line";
/// The languages a fence holding calls may be marked with.
const FENCE_LANGS: [&str; 5] = ["", "json", "jsonl", "tool_call", "tool_calls"];

/// Where in the reply calls were written, and the calls.
type Taken = (Range<usize>, Vec<TextCall>);

/// The reply as one JSON value: a call or a list of calls. `Found::Nothing` for any other
/// reply, and for JSON that is not a call; malformed for a broken JSON call to an offered tool.
pub(crate) fn whole(text: &str, tools: &[Offered]) -> Found {
    let body = strip_ends(text.trim());
    match serde_json::from_str::<Value>(body) {
        Ok(v) => answer(calls_in(std::slice::from_ref(&v), tools)),
        Err(e)
            if body.starts_with('{') && json_seq(body).is_err() && names_offered(body, tools) =>
        {
            malformed(&format!("the JSON call is not valid ({e})"), EXAMPLE)
        }
        Err(_) => Found::Nothing,
    }
}

/// The whole reply, else every fence and every object on lines of its own that holds calls.
pub(crate) fn recover(text: &str, tools: &[Offered]) -> Found {
    if let Ok(v) = serde_json::from_str::<Value>(strip_ends(text.trim())) {
        return answer(calls_in(std::slice::from_ref(&v), tools));
    }
    let fences = fences(text);
    let mut taken: Vec<Taken> = Vec::new();
    for (range, body) in fences.iter().filter(|(_, body)| body.is_some()) {
        let body = body.clone().unwrap_or_default();
        match block(&text[body], tools) {
            Some(Ok(calls)) => taken.push((range.clone(), calls)),
            Some(Err(problem)) => return malformed(&problem, EXAMPLE),
            None => {}
        }
    }
    // Between the fences (of any language): objects standing on lines of their own.
    let mut from = 0;
    let ends = fences.iter().map(|(r, _)| r.clone());
    for fence in ends.chain(std::iter::once(text.len()..text.len())) {
        match line_objects(text, from..fence.start, tools) {
            Ok(mut found) => taken.append(&mut found),
            Err(problem) => return malformed(&problem, EXAMPLE),
        }
        from = fence.end;
    }
    taken.sort_by_key(|(range, _)| range.start);
    let (mut kept, mut calls, mut at) = (String::new(), Vec::new(), 0);
    for (range, mut c) in taken {
        kept.push_str(&text[at..range.start]);
        calls.append(&mut c);
        at = range.end;
        // A call that had lines of its own leaves no empty line behind.
        if (kept.is_empty() || kept.ends_with('\n')) && text[at..].starts_with('\n') {
            at += 1;
        }
    }
    kept.push_str(&text[at..]);
    found(&kept, calls)
}

/// What a whole reply's JSON is: calls, a broken call, or the answer.
fn answer(calls: Option<Result<Vec<TextCall>, String>>) -> Found {
    match calls {
        Some(Ok(calls)) => found("", calls),
        Some(Err(problem)) => malformed(&problem, EXAMPLE),
        None => Found::Nothing,
    }
}

/// The calls in a fence's JSON: some when every value is a call naming an offered tool (an
/// error when one of those cannot be read), none when it is not calls.
fn block(body: &str, tools: &[Offered]) -> Option<Result<Vec<TextCall>, String>> {
    let values = match json_seq(body) {
        Ok((values, tail)) if tail.is_empty() && !values.is_empty() => values,
        Ok(_) => return None,
        Err(e) => {
            let broken = names_offered(body, tools);
            return broken.then(|| Err(format!("the JSON call is not valid ({e})")));
        }
    };
    calls_in(&values, tools)
}

/// Calls, when every value (or item of a list) is a call naming an offered tool.
fn calls_in(values: &[Value], tools: &[Offered]) -> Option<Result<Vec<TextCall>, String>> {
    let items: Vec<&Value> = values
        .iter()
        .flat_map(|v| match v {
            Value::Array(items) => items.iter().collect(),
            one => vec![one],
        })
        .collect();
    let mut calls = Vec::new();
    for item in items {
        match bare_call(item, tools)? {
            Ok(call) => calls.push(call),
            Err(problem) => return Some(Err(problem)),
        }
    }
    (!calls.is_empty()).then_some(Ok(calls))
}

/// Every fence: the whole fence, and its body when it is marked as JSON (or not marked).
fn fences(text: &str) -> Vec<(Range<usize>, Option<Range<usize>>)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find("```").map(|i| from + i) {
        let after = open + 3;
        let line_end = text[after..].find('\n').map_or(text.len(), |i| after + i);
        let lang = text[after..line_end].trim();
        let body_start = (line_end + 1).min(text.len());
        let Some(close) = text[body_start..].find("```").map(|i| body_start + i) else {
            break;
        };
        let json = FENCE_LANGS.contains(&lang.to_ascii_lowercase().as_str());
        out.push((open..close + 3, json.then_some(body_start..close)));
        from = close + 3;
    }
    out
}

/// The JSON objects in `range` of `text` that start a line and end one (a `,` after one
/// allowed) and are calls naming offered tools; an error for a line that starts a call to an
/// offered tool that cannot be read.
fn line_objects(text: &str, range: Range<usize>, tools: &[Offered]) -> Result<Vec<Taken>, String> {
    let mut out = Vec::new();
    let mut at = range.start;
    while at < range.end {
        let line_end = text[at..range.end].find('\n').map_or(range.end, |i| at + i);
        let line = &text[at..line_end];
        let start = at + (line.len() - line.trim_start().len());
        let mut next = line_end + 1;
        if line.trim_start().starts_with('{') {
            let mut stream =
                serde_json::Deserializer::from_str(&text[start..range.end]).into_iter::<Value>();
            match stream.next() {
                Some(Ok(v)) => {
                    let end = start + stream.byte_offset();
                    let eol = text[end..range.end]
                        .find('\n')
                        .map_or(range.end, |i| end + i);
                    let after = text[end..eol].trim();
                    if after.is_empty() || after == "," {
                        match calls_in(std::slice::from_ref(&v), tools) {
                            Some(Ok(calls)) => {
                                out.push((start..if after.is_empty() { end } else { eol }, calls));
                            }
                            Some(Err(problem)) => return Err(problem),
                            None => {}
                        }
                    }
                    // The lines inside a value that is not a call are not searched again.
                    next = eol + 1;
                }
                Some(Err(e)) if names_offered(line, tools) => {
                    return Err(format!("the JSON call is not valid ({e})"));
                }
                // Nor are those before where the JSON broke.
                Some(Err(e)) => next = next.max(line_after(text, start, e.line())),
                None => {}
            }
        }
        at = next;
    }
    Ok(out)
}

/// Where the line after the `line`th (from 1) that starts at `from` begins.
fn line_after(text: &str, from: usize, line: usize) -> usize {
    (text[from..].match_indices('\n'))
        .nth(line.saturating_sub(1))
        .map_or(text.len(), |(i, _)| from + i + 1)
}
