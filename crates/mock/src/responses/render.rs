//! A scenario turn as OpenAI's Responses API answers it: a `response` object, or its SSE events
//! (`response.created` ... `response.completed`). A turn's `reasoning` is a reasoning item
//! first, with an `encrypted_content` when the request asked for it (`include`).

use crate::render::{Reply, pieces};
use crate::scenario::{MockCall, Turn};
use serde_json::{Value, json};

/// What a request asked for that shapes its reply.
pub struct Asked {
    /// `stream: true`.
    pub stream: bool,
    /// `include` names `reasoning.encrypted_content`.
    pub encrypted_reasoning: bool,
}

impl Asked {
    /// What `body` asks for.
    pub fn of(body: &Value) -> Asked {
        Asked {
            stream: body["stream"] == true,
            encrypted_reasoning: (body["include"].as_array().into_iter().flatten())
                .any(|i| i == "reasoning.encrypted_content"),
        }
    }
}

/// The opaque `encrypted_content` of turn `n`'s reasoning (the mock can tell its own).
pub fn encrypted(n: usize, text: &str) -> String {
    let hex: String = text.bytes().take(24).map(|b| format!("{b:02x}")).collect();
    format!("gAAAAB-kiln-mock-{n}-{hex}")
}

/// The output items of turn `n`, complete (`done`) or as first announced.
fn items(turn: &Turn, n: usize, asked: &Asked, done: bool) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(s) = &turn.searched {
        out.extend(crate::offered::search::responses_items(s, n));
    }
    if let Some(r) = &turn.reasoning {
        let mut item = json!({"id": format!("rs_mock_{n}"), "type": "reasoning", "summary": [], "encrypted_content": null});
        if done {
            item["summary"] = json!([{"type": "summary_text", "text": r}]);
            if asked.encrypted_reasoning {
                item["encrypted_content"] = json!(encrypted(n, r));
            }
        }
        out.push(item);
    }
    if let Some(t) = &turn.text {
        let content = if done {
            json!([{"type": "output_text", "text": t, "annotations": [], "logprobs": []}])
        } else {
            json!([])
        };
        out.push(
            json!({"id": format!("msg_mock_{n}"), "type": "message", "role": "assistant",
            "status": if done { "completed" } else { "in_progress" }, "content": content}),
        );
    }
    let calls = turn.calls();
    for (i, c) in calls.iter().enumerate() {
        let cut = turn.truncate && i + 1 == calls.len();
        let status = match (done, cut) {
            (true, false) => "completed",
            (true, true) => "incomplete",
            (false, _) => "in_progress",
        };
        let args = if done {
            arguments(turn, i, c)
        } else {
            String::new()
        };
        out.push(
            json!({"id": format!("fc_mock_{n}_{i}"), "type": "function_call", "status": status,
            "call_id": format!("call_mock_{n}_{i}"), "name": c.name, "arguments": args}),
        );
    }
    out
}

/// A call's arguments text; the last call's cut in half on a truncated turn.
fn arguments(turn: &Turn, i: usize, c: &MockCall) -> String {
    let full = c.arguments_text();
    if turn.truncate && i + 1 == turn.calls().len() {
        full.chars().take(full.chars().count() / 2).collect()
    } else {
        full
    }
}

/// The `response` object of turn `n` with `output`.
fn response(turn: &Turn, n: usize, model: &str, status: &str, output: Vec<Value>) -> Value {
    let u = turn.usage();
    let usage = (status != "in_progress").then(|| {
        json!({"input_tokens": u.input_tokens, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": u.output_tokens, "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
            "total_tokens": u.input_tokens + u.output_tokens})
    });
    let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
    let mut response = json!({"id": format!("resp_mock_{n}"), "object": "response", "created_at": 1_764_000_000 + n as u64,
        "status": status, "error": null, "incomplete_details": incomplete, "instructions": null,
        "max_output_tokens": null, "model": model, "output": output, "parallel_tool_calls": true,
        "previous_response_id": null, "reasoning": {"effort": null, "summary": null}, "store": false,
        "temperature": 1.0, "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
        "top_p": 1.0, "truncation": "disabled", "metadata": {}});
    if let Some(usage) = usage {
        response["usage"] = usage;
    }
    response
}

/// Turn number `n` as the Responses API answers it.
pub fn render(turn: &Turn, n: usize, model: &str, asked: &Asked) -> Reply {
    if turn.malformed {
        return if asked.stream {
            Reply::Stream(vec![
                "event: response.created\ndata: {\"type\": \"response.created\", oops\n\n".into(),
            ])
        } else {
            Reply::Raw("{\"id\": \"resp_mock\", \"object\": \"response\", \"output\": [".into())
        };
    }
    let status = if turn.truncate {
        "incomplete"
    } else {
        "completed"
    };
    if !asked.stream {
        if let Some(e) = &turn.stream_error {
            let mut failed = response(turn, n, model, "failed", vec![]);
            failed["error"] = json!({"code": "server_error", "message": e});
            return Reply::Json(failed);
        }
        return Reply::Json(response(
            turn,
            n,
            model,
            status,
            items(turn, n, asked, true),
        ));
    }
    Reply::Stream(events(turn, n, model, asked, status))
}

/// The SSE events of a streamed turn.
fn events(turn: &Turn, n: usize, model: &str, asked: &Asked, status: &str) -> Vec<String> {
    let mut seq = 0;
    let mut out = Vec::new();
    let mut push = |mut ev: Value| {
        ev["sequence_number"] = json!(seq);
        seq += 1;
        out.push(format!(
            "event: {}\ndata: {ev}\n\n",
            ev["type"].as_str().unwrap_or("")
        ));
    };
    let started = response(turn, n, model, "in_progress", vec![]);
    push(json!({"type": "response.created", "response": started}));
    push(json!({"type": "response.in_progress", "response": started}));
    if let Some(e) = &turn.stream_error {
        push(json!({"type": "error", "code": "server_error", "message": e, "param": null}));
        return out;
    }
    let (first, last) = (items(turn, n, asked, false), items(turn, n, asked, true));
    for (index, (added, done)) in first.into_iter().zip(last.iter()).enumerate() {
        let id = added["id"].clone();
        push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
        match done["type"].as_str() {
            Some("message") => {
                let text = done["content"][0]["text"].as_str().unwrap_or("");
                let part = |t: &str| json!({"type": "output_text", "text": t, "annotations": [], "logprobs": []});
                let at = json!({"item_id": id, "output_index": index, "content_index": 0});
                push(merge(
                    &at,
                    json!({"type": "response.content_part.added", "part": part("")}),
                ));
                for p in pieces(text, 8) {
                    push(merge(
                        &at,
                        json!({"type": "response.output_text.delta", "delta": p, "logprobs": []}),
                    ));
                }
                push(merge(
                    &at,
                    json!({"type": "response.output_text.done", "text": text, "logprobs": []}),
                ));
                push(merge(
                    &at,
                    json!({"type": "response.content_part.done", "part": part(text)}),
                ));
            }
            Some("function_call") => {
                let args = done["arguments"].as_str().unwrap_or("");
                for p in pieces(args, 6) {
                    push(
                        json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": p}),
                    );
                }
                if done["status"] == "incomplete" {
                    continue;
                }
                push(
                    json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "name": done["name"], "arguments": args}),
                );
            }
            _ => {}
        }
        push(json!({"type": "response.output_item.done", "output_index": index, "item": done}));
    }
    let end = if status == "incomplete" {
        "response.incomplete"
    } else {
        "response.completed"
    };
    push(json!({"type": end, "response": response(turn, n, model, status, last)}));
    if turn.cut {
        out.truncate((out.len() / 2).max(1));
    }
    out
}

fn merge(base: &Value, extra: Value) -> Value {
    let mut out = base.clone();
    if let (Some(o), Value::Object(e)) = (out.as_object_mut(), extra) {
        o.extend(e);
    }
    out
}
