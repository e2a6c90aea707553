//! Bedrock Converse in the mock: the checks Converse makes of a request (with its error
//! shape: `{"message"}` and the `x-amzn-ErrorType` header), and a scenario turn rendered as a
//! Converse reply or as a ConverseStream event stream (binary frames with their CRCs, written
//! by `aws-smithy-eventstream`).

pub mod sigv4;

use super::scenario::{Fault, Turn};
use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue as HttpValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::Duration;

/// The media type of an event stream.
pub const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

pub use super::errors::Refusal;

/// AWS's error reply: `{"message"}` with the type in `x-amzn-ErrorType`.
pub fn error_response((status, kind, message): Refusal) -> Response {
    let mut resp = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(json!({"message": message})),
    )
        .into_response();
    let kind = format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/");
    if let Ok(v) = HttpValue::from_str(&kind) {
        resp.headers_mut().insert("x-amzn-errortype", v);
    }
    resp.headers_mut()
        .insert("x-amzn-requestid", HttpValue::from_static("kiln-mock"));
    resp
}

/// The exception a fault's status stands for.
fn exception(status: u16) -> &'static str {
    match status {
        400 => "ValidationException",
        403 => "AccessDeniedException",
        404 => "ResourceNotFoundException",
        408 => "ModelTimeoutException",
        424 => "ModelErrorException",
        429 => "ThrottlingException",
        503 => "ServiceUnavailableException",
        _ => "InternalServerException",
    }
}

/// A scenario fault as Bedrock answers it.
pub fn fault_response(f: &Fault) -> Response {
    let message = (f.message.clone()).unwrap_or_else(|| format!("mock fault {}", f.status));
    let mut resp = error_response((f.status, exception(f.status), message));
    if let Some(s) = f.retry_after
        && let Ok(v) = HttpValue::from_str(&s.to_string())
    {
        resp.headers_mut().insert("retry-after", v);
    }
    resp
}

fn invalid(message: impl Into<String>) -> Refusal {
    (400, "ValidationException", message.into())
}

/// Checks a Converse request body as the service does.
pub fn check(body: &Value) -> Result<(), Refusal> {
    let Some(msgs) = body["messages"].as_array() else {
        return Err(invalid(
            "A conversation must start with a user message. Try again with a conversation that starts with a user message.",
        ));
    };
    let names = tool_names(body)?;
    super::tool_choice::bedrock(body)?;
    let mut pending: Vec<String> = Vec::new();
    let mut last_role = "";
    for (i, m) in msgs.iter().enumerate() {
        let role = m["role"].as_str().unwrap_or_default();
        if !matches!(role, "user" | "assistant") {
            return Err(invalid(format!(
                "messages.{i}.role: Member must satisfy enum value set: [user, assistant]"
            )));
        }
        if i == 0 && role != "user" {
            return Err(invalid(
                "A conversation must start with a user message. Try again with a conversation that starts with a user message.",
            ));
        }
        if role == last_role {
            return Err(invalid(
                "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.",
            ));
        }
        last_role = role;
        let content = m["content"].as_array().filter(|c| !c.is_empty()).ok_or_else(|| {
            invalid(format!("The content field in the Message object at messages.{i} is empty. Add a ContentBlock object to the content field and try again."))
        })?;
        check_blocks(i, content, &names)?;
        let uses: Vec<String> = content
            .iter()
            .filter_map(|b| b["toolUse"]["toolUseId"].as_str().map(str::to_string))
            .collect();
        let results: Vec<&str> = content
            .iter()
            .filter_map(|b| b["toolResult"]["toolUseId"].as_str())
            .collect();
        if role == "user" {
            if results.len() > pending.len() {
                return Err(invalid(format!(
                    "The number of toolResult blocks at messages.{i}.content exceeds the number of toolUse blocks of previous turn."
                )));
            }
            let missing: Vec<&str> = (pending.iter())
                .filter(|id| !results.contains(&id.as_str()))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                return Err(invalid(format!(
                    "Expected toolResult blocks at messages.{i}.content for the following Ids: {}",
                    missing.join(", ")
                )));
            }
            pending.clear();
        } else {
            pending = uses;
        }
    }
    Ok(())
}

/// The tools offered (checked), by name.
fn tool_names(body: &Value) -> Result<HashSet<String>, Refusal> {
    let mut names = HashSet::new();
    let Some(config) = body.get("toolConfig") else {
        return Ok(names);
    };
    let tools = config["tools"]
        .as_array()
        .ok_or_else(|| invalid("toolConfig.tools: Member must not be null"))?;
    for (i, t) in tools.iter().enumerate() {
        let spec = &t["toolSpec"];
        let name = spec["name"].as_str().unwrap_or_default();
        let valid = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(invalid(format!(
                "toolConfig.tools.{i}.toolSpec.name: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+"
            )));
        }
        if !spec["inputSchema"]["json"].is_object() {
            return Err(invalid(format!(
                "toolConfig.tools.{i}.toolSpec.inputSchema: Member must not be null"
            )));
        }
        names.insert(name.to_string());
    }
    Ok(names)
}

fn check_blocks(i: usize, content: &[Value], tools: &HashSet<String>) -> Result<(), Refusal> {
    for (j, b) in content.iter().enumerate() {
        if let Some(t) = b.get("text") {
            if t.as_str().is_none_or(|t| t.trim().is_empty()) {
                return Err(invalid(format!(
                    "The text field in the ContentBlock object at messages.{i}.content.{j} is blank. Add text to the text field, and try again."
                )));
            }
        } else if b.get("toolUse").is_some() || b.get("toolResult").is_some() {
            if tools.is_empty() {
                return Err(invalid(
                    "The toolConfig field must be defined when using toolUse and toolResult content blocks.",
                ));
            }
            let u = &b["toolUse"];
            if u.is_object() && !(u["toolUseId"].is_string() && u["input"].is_object()) {
                return Err(invalid(format!(
                    "messages.{i}.content.{j}.toolUse: toolUseId, name and input are required"
                )));
            }
            let r = &b["toolResult"];
            if r.is_object() && !r["content"].is_array() {
                return Err(invalid(format!(
                    "messages.{i}.content.{j}.toolResult.content: Member must not be null"
                )));
            }
            if let Some(s) = r["status"]
                .as_str()
                .filter(|s| !matches!(*s, "success" | "error"))
            {
                return Err(invalid(format!(
                    "messages.{i}.content.{j}.toolResult.status: '{s}' must satisfy enum value set: [success, error]"
                )));
            }
        } else if let Some(checked) = super::parts::bedrock(i, j, b) {
            checked?;
        } else {
            return Err(invalid(format!(
                "messages.{i}.content.{j}: the content block holds no member kiln-mock knows"
            )));
        }
    }
    Ok(())
}

/// A turn's stop reason.
fn stop(turn: &Turn) -> &'static str {
    match (turn.truncate, turn.calls().is_empty()) {
        (true, _) => "max_tokens",
        (false, true) => "end_turn",
        (false, false) => "tool_use",
    }
}

fn call_id(n: usize, i: usize) -> String {
    format!("tooluse_mock{n}x{i}")
}

/// Turn `n` as a Converse reply.
pub fn whole(turn: &Turn, n: usize) -> Response {
    if turn.malformed {
        let raw = "{\"output\": {\"message\": {\"content\": [";
        return (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            raw,
        )
            .into_response();
    }
    if let Some(e) = &turn.stream_error {
        return error_response((424, "ModelErrorException", e.clone()));
    }
    axum::Json(whole_body(turn, n)).into_response()
}

/// Turn `n` as a Converse reply's JSON (a well-formed turn).
pub fn whole_body(turn: &Turn, n: usize) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &turn.text {
        content.push(json!({"text": t}));
    }
    for (i, c) in turn.calls().iter().enumerate() {
        content.push(json!({"toolUse": {"toolUseId": call_id(n, i), "name": c.name, "input": c.arguments_object()}}));
    }
    let u = turn.usage();
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop(turn),
        "usage": {"inputTokens": u.input_tokens, "outputTokens": u.output_tokens, "totalTokens": u.input_tokens + u.output_tokens},
        "metrics": {"latencyMs": 1},
    })
}

/// One event stream frame: its headers, then `payload`.
fn frame(headers: &[(&str, &str)], payload: &Value) -> Vec<u8> {
    let mut msg = Message::new(Bytes::from(payload.to_string()));
    for (name, value) in headers {
        msg = msg.add_header(Header::new(
            name.to_string(),
            HeaderValue::String(value.to_string().into()),
        ));
    }
    let mut out = Vec::new();
    // Only a header too long for the format fails; the mock writes none.
    let _ = write_message_to(&msg, &mut out);
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    let headers = [
        (":event-type", kind),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ];
    frame(&headers, &payload)
}

/// Turn `n` as ConverseStream's event stream frames.
pub fn frames(turn: &Turn, n: usize) -> Vec<Vec<u8>> {
    let mut out = vec![event(
        "messageStart",
        json!({"role": "assistant", "p": "abcd"}),
    )];
    if turn.malformed {
        // A frame whose message CRC is wrong.
        let mut bad = event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "x"}}),
        );
        if let Some(last) = bad.last_mut() {
            *last ^= 0xff;
        }
        out.push(bad);
        return out;
    }
    let mut index = 0;
    if let Some(t) = turn.text.as_deref().filter(|t| !t.is_empty()) {
        for piece in t.chars().collect::<Vec<_>>().chunks(8) {
            let text: String = piece.iter().collect();
            out.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": 0, "delta": {"text": text}}),
            ));
        }
        out.push(event("contentBlockStop", json!({"contentBlockIndex": 0})));
        index = 1;
    }
    if let Some(e) = &turn.stream_error {
        let headers = [
            (":exception-type", "modelStreamErrorException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ];
        out.push(frame(&headers, &json!({"message": e})));
        return out;
    }
    let calls = turn.calls();
    for (i, c) in calls.iter().enumerate() {
        let block = index + i;
        out.push(event("contentBlockStart", json!({"contentBlockIndex": block, "start": {"toolUse": {"toolUseId": call_id(n, i), "name": c.name}}})));
        let args = c.arguments_object().to_string();
        let cut_here = turn.truncate && i + 1 == calls.len();
        let args = if cut_here {
            &args[..args.len() / 2]
        } else {
            &args[..]
        };
        let (a, b) = args.split_at(args.len() / 2);
        for part in [a, b].into_iter().filter(|p| !p.is_empty()) {
            out.push(event(
                "contentBlockDelta",
                json!({"contentBlockIndex": block, "delta": {"toolUse": {"input": part}}}),
            ));
        }
        if !cut_here {
            out.push(event(
                "contentBlockStop",
                json!({"contentBlockIndex": block}),
            ));
        }
    }
    out.push(event("messageStop", json!({"stopReason": stop(turn)})));
    let u = turn.usage();
    out.push(event("metadata", json!({
        "usage": {"inputTokens": u.input_tokens, "outputTokens": u.output_tokens, "totalTokens": u.input_tokens + u.output_tokens},
        "metrics": {"latencyMs": 1},
    })));
    if turn.cut {
        out.truncate((out.len() / 2).max(1));
    }
    out
}

/// Turn `n` as a streamed reply, `delay` between frames.
pub fn streamed(turn: &Turn, n: usize, delay: Duration) -> Response {
    let frames = frames(turn, n);
    let stream = futures_util::stream::unfold(frames.into_iter(), move |mut it| async move {
        let next = it.next()?;
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        Some((Ok::<Bytes, std::convert::Infallible>(Bytes::from(next)), it))
    });
    (
        [(axum::http::header::CONTENT_TYPE, EVENT_STREAM)],
        Body::from_stream(stream),
    )
        .into_response()
}
