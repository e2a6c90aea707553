//! Renders a scenario turn in each wire format, whole or as a stream of chunks; the input
//! tokens a reply reports may be counted from its request ([`count`]).

pub mod count;

use super::scenario::Turn;
use serde_json::{Value, json};

/// What the mock sends back for a turn.
pub enum Reply {
    /// A JSON body.
    Json(Value),
    /// Raw text (malformed bodies).
    Raw(String),
    /// Stream chunks, already framed (SSE events or NDJSON lines).
    Stream(Vec<String>),
}

pub(crate) fn pieces(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(size.max(1))
        .map(|c| c.iter().collect())
        .collect()
}

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

/// Cuts a stream about half way, for `cut: true`.
fn cut(mut chunks: Vec<String>, turn: &Turn) -> Vec<String> {
    if turn.cut {
        chunks.truncate((chunks.len() / 2).max(1));
    }
    chunks
}

/// The id the scenario gives call `i` of `turn` ([`super::scenario::MockCall::id`]), if any.
fn own_id(turn: &Turn, i: usize) -> Option<String> {
    turn.calls().get(i).and_then(|c| c.id.clone())
}

/// Anthropic Messages reply for turn number `n`.
pub fn anthropic(turn: &Turn, n: usize, model: &str, stream: bool) -> Reply {
    let usage = turn.usage();
    let id = format!("msg_mock_{n}");
    let call_id = |i: usize| own_id(turn, i).unwrap_or_else(|| format!("toolu_mock_{n}_{i}"));
    let stop = if turn.truncate {
        "max_tokens"
    } else if turn.pause {
        "pause_turn"
    } else if turn.calls().is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    if turn.malformed {
        return if stream {
            Reply::Stream(vec![
                "event: message_start\ndata: {\"type\": \"message_start\", \"message\": {oops\n\n"
                    .into(),
            ])
        } else {
            Reply::Raw("{\"id\": \"msg_mock\", \"content\": [".into())
        };
    }
    if !stream {
        if let Some(e) = &turn.stream_error {
            return Reply::Json(
                json!({"type": "error", "error": {"type": "api_error", "message": e}}),
            );
        }
        let mut content = Vec::new();
        if let Some(s) = &turn.searched {
            content.extend(super::offered::search::anthropic_blocks(s, n));
        }
        if let Some(t) = &turn.text {
            content.push(json!({"type": "text", "text": t}));
        }
        for (i, c) in turn.calls().iter().enumerate() {
            content.push(json!({"type": "tool_use", "id": call_id(i), "name": c.name, "input": c.arguments_object()}));
        }
        return Reply::Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": stop, "stop_sequence": null,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }));
    }
    let mut out = vec![sse(
        "message_start",
        &json!({"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": 1}}}),
    )];
    if let Some(e) = &turn.stream_error {
        out.push(sse(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": e}}),
        ));
        return Reply::Stream(out);
    }
    let mut index = 0;
    if let Some(s) = &turn.searched {
        out.extend(searched_events(s, n, &mut index));
    }
    if let Some(t) = &turn.text {
        out.push(sse("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        out.push(sse("ping", &json!({"type": "ping"})));
        for p in pieces(t, 8) {
            out.push(sse("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}})));
        }
        out.push(sse(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let last = turn.calls().len().saturating_sub(1);
    for (i, c) in turn.calls().iter().enumerate() {
        out.push(sse("content_block_start", &json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": call_id(i), "name": c.name, "input": {}}})));
        let mut frags = vec![String::new()];
        frags.extend(pieces(&c.arguments_object().to_string(), 6));
        let truncated = turn.truncate && i == last;
        if truncated {
            frags.truncate((frags.len() / 2).max(2));
        }
        for f in frags {
            out.push(sse("content_block_delta", &json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": f}})));
        }
        if !truncated {
            out.push(sse(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": index}),
            ));
        }
        index += 1;
    }
    out.push(sse("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": usage.output_tokens}})));
    out.push(sse("message_stop", &json!({"type": "message_stop"})));
    Reply::Stream(cut(out, turn))
}

/// The stream events of a search's server blocks from block `index` on: the
/// `server_tool_use` with its input streamed as JSON, then its result whole.
fn searched_events(s: &super::scenario::Searched, n: usize, index: &mut usize) -> Vec<String> {
    let [used, result] = super::offered::search::anthropic_blocks(s, n);
    let mut started = used.clone();
    started["input"] = json!({});
    let mut out = vec![sse(
        "content_block_start",
        &json!({"type": "content_block_start", "index": *index, "content_block": started}),
    )];
    for f in pieces(&used["input"].to_string(), 6) {
        out.push(sse("content_block_delta", &json!({"type": "content_block_delta", "index": *index, "delta": {"type": "input_json_delta", "partial_json": f}})));
    }
    out.push(sse(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": *index}),
    ));
    *index += 1;
    out.push(sse(
        "content_block_start",
        &json!({"type": "content_block_start", "index": *index, "content_block": result}),
    ));
    out.push(sse(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": *index}),
    ));
    *index += 1;
    out
}

/// OpenAI Chat Completions reply for turn number `n`.
pub fn openai(turn: &Turn, n: usize, model: &str, stream: bool, include_usage: bool) -> Reply {
    let usage = turn.usage();
    let id = format!("chatcmpl-mock{n}");
    let call_id = |i: usize| own_id(turn, i).unwrap_or_else(|| format!("call_mock_{n}_{i}"));
    let finish = if turn.truncate {
        "length"
    } else if turn.calls().is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let usage_json = json!({"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens, "total_tokens": usage.input_tokens + usage.output_tokens});
    let created = 1_764_000_000 + n as u64;
    if turn.malformed {
        return if stream {
            Reply::Stream(vec![
                "data: {\"id\": \"chatcmpl-mock\", \"choices\": [{\"delta\": {\n\n".into(),
            ])
        } else {
            Reply::Raw("{\"id\": \"chatcmpl-mock\", \"choices\": [".into())
        };
    }
    let args_text = |i: usize, c: &super::scenario::MockCall| {
        let full = c.arguments_text();
        if turn.truncate && i + 1 == turn.calls().len() {
            full.chars().take(full.chars().count() / 2).collect()
        } else {
            full
        }
    };
    if !stream {
        if let Some(e) = &turn.stream_error {
            return Reply::Json(
                json!({"error": {"message": e, "type": "server_error", "param": null, "code": null}}),
            );
        }
        let calls: Vec<Value> = turn.calls().iter().enumerate().map(|(i, c)| json!({"id": call_id(i), "type": "function", "function": {"name": c.name, "arguments": args_text(i, c)}})).collect();
        let mut message =
            json!({"role": "assistant", "content": turn.text, "refusal": null, "annotations": []});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls);
        }
        return Reply::Json(json!({
            "id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish}],
            "usage": usage_json, "service_tier": "default", "system_fingerprint": "fp_mock",
        }));
    }
    let chunk = |delta: Value, finish: Option<&str>| {
        let c = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    if let Some(e) = &turn.stream_error {
        out.push(format!(
            "data: {}\n\n",
            json!({"error": {"message": e, "type": "server_error", "param": null, "code": null}})
        ));
        return Reply::Stream(out);
    }
    if let Some(t) = &turn.text {
        for p in pieces(t, 8) {
            out.push(chunk(json!({"content": p}), None));
        }
    }
    for (i, c) in turn.calls().iter().enumerate() {
        out.push(chunk(json!({"tool_calls": [{"index": i, "id": call_id(i), "type": "function", "function": {"name": c.name, "arguments": ""}}]}), None));
        for p in pieces(&args_text(i, c), 6) {
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": p}}]}),
                None,
            ));
        }
    }
    out.push(chunk(json!({}), Some(finish)));
    if include_usage {
        let u = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "system_fingerprint": "fp_mock", "choices": [], "usage": usage_json});
        out.push(format!("data: {u}\n\n"));
    }
    out.push("data: [DONE]\n\n".into());
    Reply::Stream(cut(out, turn))
}

/// Ollama `/api/chat` reply for turn number `n`.
pub fn ollama(turn: &Turn, n: usize, model: &str, stream: bool, with_ids: bool) -> Reply {
    let usage = turn.usage();
    let created = "2026-11-29T12:00:00.000000Z";
    if turn.malformed {
        return if stream {
            Reply::Stream(vec!["{\"model\": \"x\", \"message\": {\n".into()])
        } else {
            Reply::Raw("{\"model\": \"x\", \"message\": ".into())
        };
    }
    if let Some(e) = &turn.stream_error {
        let first = json!({"model": model, "created_at": created, "message": {"role": "assistant", "content": ""}, "done": false});
        return if stream {
            Reply::Stream(vec![
                format!("{first}\n"),
                format!("{}\n", json!({"error": e})),
            ])
        } else {
            Reply::Json(json!({"error": e}))
        };
    }
    let calls: Vec<Value> = turn
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut call = json!({"function": {"index": i, "name": c.name, "arguments": c.arguments_object()}});
            if with_ids {
                call["id"] = json!(format!("call_mock_{n}_{i}"));
            }
            call
        })
        .collect();
    let reason = if turn.truncate { "length" } else { "stop" };
    let done = |content: &str, calls: &[Value]| {
        let mut message = json!({"role": "assistant", "content": content});
        if !calls.is_empty() {
            message["tool_calls"] = Value::Array(calls.to_vec());
        }
        json!({"model": model, "created_at": created, "message": message, "done": true, "done_reason": reason,
            "total_duration": 1_000_000, "load_duration": 1000, "prompt_eval_count": usage.input_tokens, "prompt_eval_duration": 1000,
            "eval_count": usage.output_tokens, "eval_duration": 1000})
    };
    if !stream {
        return Reply::Json(done(turn.text.as_deref().unwrap_or(""), &calls));
    }
    let mut out = Vec::new();
    for p in pieces(turn.text.as_deref().unwrap_or(""), 8) {
        out.push(format!("{}\n", json!({"model": model, "created_at": created, "message": {"role": "assistant", "content": p}, "done": false})));
    }
    if !calls.is_empty() {
        out.push(format!("{}\n", json!({"model": model, "created_at": created, "message": {"role": "assistant", "content": "", "tool_calls": calls}, "done": false})));
    }
    out.push(format!("{}\n", done("", &[])));
    Reply::Stream(cut(out, turn))
}
