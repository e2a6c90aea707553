//! The Responses API's wire code against a recorded real reply (tests/specs, see SOURCES.md)
//! and the mock against kiln's own parser and requests: what the mock renders, kiln reads;
//! what kiln sends back (reasoning items included), the mock's checks accept.

use crate::render::Reply;
use crate::responses::check::{assistant_turns, check};
use crate::responses::render::{Asked, encrypted, render};
use crate::scenario::Turn;
use axum::http::HeaderMap;
use kiln_providers::openai::responses::{parse_response, parse_sse, request_body};
use kiln_providers::{Message, ModelRequest, ProviderError, StopReason, TextSink, ToolResult};
use serde_json::{Value, json};

fn sink() -> TextSink {
    std::sync::Arc::new(|_: &str| {})
}

fn turn(v: Value) -> Turn {
    serde_json::from_value(v).expect("turn")
}

fn auth() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("authorization", "Bearer k".parse().expect("header"));
    h
}

#[test]
fn a_recorded_responses_reply_parses() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/specs/openai/fixtures/responses-output-text.json");
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("json");
    let r = parse_response(&v).expect("parses");
    assert!(
        r.text.starts_with("I can't provide real-time updates"),
        "{}",
        r.text
    );
    assert_eq!(r.stop, StopReason::EndTurn);
    assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (14, 50));
    assert_eq!(r.replay, None, "a message alone needs nothing sent back");
}

#[test]
fn what_the_mock_renders_kiln_reads_and_what_kiln_sends_back_the_mock_accepts() {
    let t = turn(json!({"reasoning": "think", "text": "Checking.",
        "tool_calls": [{"name": "calc", "args": {"x": 1}}],
        "usage": {"input_tokens": 3, "output_tokens": 9, "reasoning_tokens": 5}}));
    let asked = Asked {
        stream: false,
        encrypted_reasoning: true,
    };
    let Reply::Json(whole) = render(&t, 0, "m", &asked) else {
        panic!("a JSON reply")
    };
    let r = parse_response(&whole).expect("kiln reads it");
    assert_eq!(r.usage.reasoning_tokens, 5);
    let Reply::Stream(events) = render(
        &t,
        0,
        "m",
        &Asked {
            stream: true,
            ..asked
        },
    ) else {
        panic!("a stream")
    };
    let streamed = parse_sse(&events.concat(), &sink()).expect("kiln reads the stream");
    assert_eq!(streamed, r, "the stream and the whole reply say the same");
    let messages = vec![
        Message::user("hi"),
        Message::Assistant {
            content: r.text.clone(),
            tool_calls: r.tool_calls.clone(),
            replay: r.replay.clone(),
        },
        Message::Tool {
            results: vec![ToolResult {
                call_id: r.tool_calls[0].id.clone(),
                name: "calc".into(),
                content: "2".into(),
                is_error: false,
            }],
        },
    ];
    let req = ModelRequest {
        model: "m".into(),
        system: None,
        messages: messages.as_slice().into(),
        tools: vec![],
        temperature: None,
        max_tokens: 10,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    };
    let body = request_body(&req);
    assert_eq!(body["input"][1]["encrypted_content"], encrypted(0, "think"));
    assert_eq!(check(&auth(), &body, true), Ok(()));
    assert_eq!(assistant_turns(&body["input"]), 1);
    // Without the encrypted content, a reasoning item cannot come back under store: false.
    let mut stripped = body.clone();
    stripped["input"][1]["encrypted_content"] = Value::Null;
    assert_eq!(check(&auth(), &stripped, true).map_err(|e| e.0), Err(404));
}

#[test]
fn a_truncated_call_and_a_failed_response_are_errors_in_both_forms() {
    let cut =
        turn(json!({"tool_calls": [{"name": "calc", "args": {"x": 12345}}], "truncate": true}));
    let failed = turn(json!({"stream_error": "overloaded"}));
    for stream in [false, true] {
        let asked = |stream| Asked {
            stream,
            encrypted_reasoning: false,
        };
        let read = |t: &Turn| match render(t, 0, "m", &asked(stream)) {
            Reply::Json(v) => parse_response(&v),
            Reply::Stream(events) => parse_sse(&events.concat(), &sink()),
            Reply::Raw(_) => panic!("not malformed"),
        };
        assert!(
            matches!(read(&cut), Err(ProviderError::Truncated { .. })),
            "stream {stream}"
        );
        let err = read(&failed).expect_err("failed").to_string();
        assert!(err.contains("server_error: overloaded"), "{err}");
    }
}
