//! A scenario turn as Gemini answers it: a `GenerateContentResponse`, or a stream of them as
//! Server-Sent Events. Like Gemini 3, the mock signs its turns: the first function call part
//! (or, with no calls, the last part) carries a `thoughtSignature` (valid base64, as the SDKs
//! decode it).

use crate::render::Reply;
use crate::scenario::Turn;
use serde_json::{Value, json};

/// The signature of part `i` of turn `n`: 20 base64 characters (15 bytes), unique per turn.
pub fn signature(n: usize, i: usize) -> String {
    format!("kilnMockSig{:05}x{:03}", n % 100_000, i % 1000)
}

/// One SSE event, framed as Gemini frames them.
fn event(data: &Value) -> String {
    format!("data: {data}\r\n\r\n")
}

fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

/// The reply to turn number `n` of `model`, whole or streamed.
pub fn reply(turn: &Turn, n: usize, model: &str, stream: bool) -> Reply {
    if turn.malformed {
        return if stream {
            Reply::Stream(vec![
                "data: {\"candidates\": [{\"content\": {\r\n\r\n".into(),
            ])
        } else {
            Reply::Raw("{\"candidates\": [{\"content\": ".into())
        };
    }
    if let Some(e) = &turn.stream_error {
        let err = json!({"error": {"code": 503, "message": e, "status": "UNAVAILABLE"}});
        return if stream {
            let first = json!({"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "index": 0}]});
            Reply::Stream(vec![event(&first), event(&err)])
        } else {
            Reply::Json(err)
        };
    }
    let mut calls = turn.calls().into_owned();
    if turn.truncate {
        // Gemini sends calls whole: the token limit drops the last one.
        calls.pop();
    }
    let finish = if turn.truncate { "MAX_TOKENS" } else { "STOP" };
    let usage = turn.usage();
    let usage = json!({
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    });
    let call_parts: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut p = json!({"functionCall": {"name": c.name, "args": c.arguments_object()}});
            if i == 0 {
                p["thoughtSignature"] = json!(signature(n, i));
            }
            p
        })
        .collect();
    let text = turn.text.as_deref().unwrap_or("");
    let candidate = |parts: Vec<Value>, finish: Option<&str>| {
        let mut c = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
        if let Some(f) = finish {
            c["finishReason"] = json!(f);
        }
        c
    };
    let response = |candidate: Value, usage: &Value| json!({"candidates": [candidate], "usageMetadata": usage, "modelVersion": model, "responseId": format!("kiln-mock-{n}")});
    // With no calls, the last part is signed: the text, or an empty text part after it.
    let text_signature = call_parts.is_empty().then(|| signature(n, 0));
    if !stream {
        let mut parts = Vec::new();
        if !text.is_empty() || call_parts.is_empty() {
            let mut p = json!({ "text": text });
            if let Some(sig) = &text_signature {
                p["thoughtSignature"] = json!(sig);
            }
            parts.push(p);
        }
        parts.extend(call_parts);
        return Reply::Json(response(candidate(parts, Some(finish)), &usage));
    }
    let so_far = json!({"promptTokenCount": usage["promptTokenCount"]});
    let mut out: Vec<String> = pieces(text, 8)
        .into_iter()
        .map(|p| {
            event(&response(
                candidate(vec![json!({"text": p})], None),
                &so_far,
            ))
        })
        .collect();
    if !call_parts.is_empty() {
        out.push(event(&response(candidate(call_parts, None), &so_far)));
    }
    let mut last = json!({ "text": "" });
    if let Some(sig) = &text_signature {
        last["thoughtSignature"] = json!(sig);
    }
    out.push(event(&response(
        candidate(vec![last], Some(finish)),
        &usage,
    )));
    if turn.cut {
        out.truncate((out.len() / 2).max(1));
    }
    Reply::Stream(out)
}
