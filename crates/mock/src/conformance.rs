//! Conformance of the wire code with the official specs and recorded exchanges in tests/specs
//! (see SOURCES.md): recorded replies and streams parse, kiln's requests have the recorded
//! structure, and the mock rejects what the real APIs rejected.

use kiln_providers::{
    self, CallArgs, Message, ModelRequest, ProviderError, StopReason, TextSink, ToolDef, ToolResult,
};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

fn specs_dir() -> PathBuf {
    std::env::var_os("KILN_SPECS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/specs"))
}

fn read_json(rel: &str) -> Value {
    let text = std::fs::read_to_string(specs_dir().join(rel)).expect("fixture");
    serde_json::from_str(&text).expect("fixture json")
}

fn collecting_sink() -> (TextSink, Arc<Mutex<String>>) {
    let buf = Arc::new(Mutex::new(String::new()));
    let b = buf.clone();
    (
        Arc::new(move |t: &str| b.lock().expect("lock").push_str(t)),
        buf,
    )
}

#[test]
fn recorded_openai_responses_and_streams_parse_into_neutral_turns() {
    let fixtures = read_json("openai/fixtures/chat-completions-tool-call-responses.json");
    let mut names = Vec::new();
    for item in fixtures["items"].as_array().expect("items") {
        let r = kiln_providers::openai::chat::parse_response(&item["response"]).expect("parses");
        assert_eq!(r.stop, StopReason::ToolUse);
        for c in &r.tool_calls {
            assert!(
                matches!(&c.args, CallArgs::Parsed(v) if v.is_object()),
                "{c:?}"
            );
            assert!(c.id.starts_with("call_"));
        }
        names.push(r.tool_calls.len());
    }
    assert!(
        names.contains(&2),
        "the recording with two parallel calls: {names:?}"
    );
    for (file, calls) in [
        ("chat-stream-f82268f2fefd.sse", 2),
        ("chat-stream-a247c49c5fcd.sse", 1),
        ("chat-stream-c6aa7e397b71.sse", 1),
        ("chat-stream-2018feb66ae1.sse", 1),
    ] {
        let text =
            std::fs::read_to_string(specs_dir().join("openai/fixtures").join(file)).expect("sse");
        let (sink, _) = collecting_sink();
        let r = kiln_providers::openai::chat::parse_sse(&text, &sink)
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(r.tool_calls.len(), calls, "{file}");
        assert_eq!(r.stop, StopReason::ToolUse, "{file}");
        assert!(
            r.tool_calls
                .iter()
                .all(|c| matches!(&c.args, CallArgs::Parsed(v) if v.is_object())),
            "{file}: {:?}",
            r.tool_calls
        );
        assert!(
            r.usage.input_tokens > 0,
            "{file}: the usage-only chunk is read"
        );
    }
}

/// Replays a recorded Anthropic tool round trip: kiln parses the recorded reply, then builds its
/// own next request for the same conversation; it must have the recorded structure.
fn replay_anthropic(file: &str) {
    let exchanges = read_json(&format!("anthropic/fixtures/{file}"));
    let ex = exchanges.as_array().expect("exchanges");
    let first_req = &ex[0]["request"]["body"];
    let reply = kiln_providers::anthropic::parse_response(&ex[0]["response"]["body"])
        .expect("reply parses");
    assert!(!reply.tool_calls.is_empty(), "{file}");
    let recorded_next = &ex[1]["request"]["body"];
    let recorded_results = recorded_next["messages"]
        .as_array()
        .and_then(|m| m.last())
        .expect("last message");
    let results: Vec<ToolResult> = recorded_results["content"]
        .as_array()
        .expect("blocks")
        .iter()
        .map(|b| ToolResult {
            call_id: b["tool_use_id"].as_str().unwrap_or("").into(),
            name: String::new(),
            content: b["content"].as_str().unwrap_or("").into(),
            is_error: b["is_error"] == true,
        })
        .collect();
    let tools: Vec<ToolDef> = first_req["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| ToolDef {
            name: t["name"].as_str().unwrap_or("").into(),
            description: t["description"].as_str().unwrap_or("").into(),
            schema: t["input_schema"].clone().into(),
            deferred: false,
        })
        .collect();
    let req = ModelRequest {
        model: first_req["model"].as_str().unwrap_or("").into(),
        system: None,
        messages: vec![
            Message::user(first_req["messages"][0]["content"].as_str().unwrap_or("")),
            Message::Assistant {
                replay: None,
                content: reply.text.clone(),
                tool_calls: reply.tool_calls.clone(),
            },
            Message::Tool { results },
        ]
        .into(),
        tools,
        temperature: None,
        max_tokens: first_req["max_tokens"].as_u64().unwrap_or(1024) as u32,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    };
    let ours = kiln_providers::anthropic::request_body(&req);
    assert_eq!(ours["tools"], recorded_next["tools"], "{file}: tools");
    assert_eq!(ours["max_tokens"], recorded_next["max_tokens"]);
    let strip = |m: &Value| -> Value {
        let mut m = m.clone();
        for b in m["content"].as_array_mut().into_iter().flatten() {
            if let Some(o) = b.as_object_mut() {
                o.remove("caller");
            }
        }
        m
    };
    let theirs: Vec<Value> = recorded_next["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(strip)
        .collect();
    assert_eq!(
        ours["messages"].as_array().expect("ours").len(),
        theirs.len(),
        "{file}"
    );
    for (a, b) in ours["messages"]
        .as_array()
        .expect("ours")
        .iter()
        .zip(&theirs)
    {
        assert_eq!(a, b, "{file}: message differs");
    }
    let mock_ok = crate::check::anthropic(&anthropic_headers(), &ours, true);
    assert!(mock_ok.is_ok(), "{file}: the mock accepts it: {mock_ok:?}");
}

fn anthropic_headers() -> axum::http::HeaderMap {
    let mut h = axum::http::HeaderMap::new();
    h.insert("x-api-key", "k".parse().expect("h"));
    h.insert("anthropic-version", "2023-06-01".parse().expect("h"));
    h
}

#[test]
fn recorded_anthropic_round_trips_replay_with_the_recorded_structure() {
    for file in [
        "toolrunner-a8ac789b.json",
        "toolrunner-10e53c1d.json",
        "toolrunner-e075a6c2.json",
    ] {
        replay_anthropic(file);
    }
}

#[test]
fn the_mock_rejects_a_tool_result_without_tool_use_as_anthropic_did() {
    let ex = read_json("anthropic/fixtures/toolrunner-f59a9391.json");
    let bad = ex
        .as_array()
        .expect("ex")
        .iter()
        .find(|e| e["response"]["status_code"] == 400)
        .expect("recorded 400");
    let (status, body) =
        crate::check::anthropic(&anthropic_headers(), &bad["request"]["body"], true)
            .expect_err("rejected");
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        bad["response"]["body"]["error"]["message"]
    );
    assert_eq!(body["error"]["type"], "invalid_request_error");
}

#[test]
fn recorded_anthropic_streams_parse_and_max_tokens_truncation_is_an_error() {
    let text = std::fs::read_to_string(
        specs_dir().join("anthropic/fixtures/stream-tool_use_response.sse"),
    )
    .expect("sse");
    let (sink, streamed) = collecting_sink();
    let r = kiln_providers::anthropic::parse_sse(&text, &sink).expect("parses");
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.tool_calls.len(), 1);
    assert!(
        matches!(&r.tool_calls[0].args, CallArgs::Parsed(v) if v.as_object().is_some_and(|m| !m.is_empty()))
    );
    assert_eq!(
        *streamed.lock().expect("lock"),
        r.text,
        "text was streamed as it arrived"
    );
    let text = std::fs::read_to_string(
        specs_dir().join("anthropic/fixtures/stream-incomplete_partial_json_max_tokens.sse"),
    )
    .expect("sse");
    let (sink, _) = collecting_sink();
    match kiln_providers::anthropic::parse_sse(&text, &sink) {
        Err(ProviderError::Truncated { tool, .. }) => assert_eq!(tool, "make_file"),
        other => panic!("expected a truncation error, got {other:?}"),
    }
    let ex = read_json("anthropic/fixtures/toolrunner-555fb399.json");
    for e in ex.as_array().expect("ex") {
        let body = e["response"]["body"].as_str().expect("raw SSE text");
        let (sink, _) = collecting_sink();
        kiln_providers::anthropic::parse_sse(body, &sink).expect("recorded stream parses");
    }
}

#[test]
fn ollama_shapes_follow_the_api_docs() {
    let doc_reply = json!({"model": "llama3.2", "created_at": "2025-07-07T20:32:53.844124Z",
        "message": {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}]},
        "done_reason": "stop", "done": true, "prompt_eval_count": 169, "eval_count": 18});
    let docs = std::fs::read_to_string(specs_dir().join("ollama/api.md")).expect("api.md");
    assert!(
        docs.contains("\"created_at\": \"2025-07-07T20:32:53.844124Z\""),
        "the example above is the one in api.md"
    );
    let (sink, _) = collecting_sink();
    let mut state = kiln_providers::ollama::ChatState::default();
    state.apply(&doc_reply.to_string(), &sink).expect("applies");
    let r = state.finish().expect("finishes");
    assert_eq!(r.tool_calls[0].name, "get_weather");
    assert_eq!(r.stop, StopReason::ToolUse);
    let req = ModelRequest {
        model: "llama3.2".into(),
        system: None,
        messages: vec![
            Message::user("what is the weather in Toronto?"),
            Message::Assistant {
                replay: None,
                content: String::new(),
                tool_calls: r.tool_calls.clone(),
            },
            Message::Tool {
                results: vec![ToolResult {
                    call_id: r.tool_calls[0].id.clone(),
                    name: "get_weather".into(),
                    content: "11 degrees celsius".into(),
                    is_error: false,
                }],
            },
        ]
        .into(),
        tools: vec![],
        temperature: None,
        max_tokens: 100,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    };
    let body = kiln_providers::ollama::request_body(&req);
    assert_eq!(
        body["messages"][1],
        json!({"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Tokyo"}}}]})
    );
    assert_eq!(
        body["messages"][2],
        json!({"role": "tool", "tool_name": "get_weather", "content": "11 degrees celsius"}),
        "no made-up tool_call_id"
    );
    assert!(crate::check::ollama(&body).is_ok());
}

/// kiln's request with deferred tools, through the mock's check, search and reply (whole
/// and streamed), read back by kiln, and kiln's next request (the search sent back)
/// through the check again: on both wires that search.
#[test]
fn kilns_requests_and_the_mocks_searches_agree_on_both_wires() {
    let tools: Vec<ToolDef> = ["weather_lookup", "unit_convert", "now"]
        .iter()
        .map(|n| ToolDef {
            name: n.to_string(),
            description: format!("{n} of a city"),
            schema: json!({"type": "object", "properties": {}}).into(),
            deferred: *n != "now",
        })
        .collect();
    let request = |messages: &[Message], anthropic: bool| {
        let req = ModelRequest {
            model: "m".into(),
            system: None,
            messages: messages.into(),
            tools: tools.clone(),
            temperature: None,
            max_tokens: 100,
            stream: false,
            unchanged_prefix: 0,
            output: None,
            tool_choice: Default::default(),
            parallel_tool_calls: None,
        };
        match anthropic {
            true => kiln_providers::anthropic::request_body(&req),
            false => kiln_providers::openai::responses::request_body(&req),
        }
    };
    let mut headers = axum::http::HeaderMap::new();
    headers.insert("anthropic-version", "2023-06-01".parse().expect("header"));
    headers.insert("x-api-key", "k".parse().expect("header"));
    headers.insert("authorization", "Bearer k".parse().expect("header"));
    let check = |body: &Value, anthropic: bool| match anthropic {
        true => crate::check::anthropic(&headers, body, true),
        false => crate::responses::check::check(&headers, body, true),
    };
    let sink: kiln_providers::TextSink = std::sync::Arc::new(|_: &str| {});
    for (anthropic, stream) in [(true, false), (true, true), (false, false), (false, true)] {
        let first = [Message::user("weather?")];
        let body = request(&first, anthropic);
        check(&body, anthropic).expect("the first request is accepted");
        let mut turn: crate::scenario::Turn = serde_json::from_value(json!({
            "tool_search": "weather", "tool_calls": [{"name": "weather_lookup", "args": {"city": "Paris"}}]}))
        .expect("turn");
        turn.searched = Some(
            match anthropic {
                true => crate::offered::search::anthropic(&body, "weather"),
                false => crate::offered::search::responses(&body, "weather"),
            }
            .expect("searched"),
        );
        let reply = match anthropic {
            true => crate::render::anthropic(&turn, 0, "m", stream),
            false => {
                let asked = crate::responses::render::Asked::of(&json!({"stream": stream}));
                crate::responses::render::render(&turn, 0, "m", &asked)
            }
        };
        let read = match (reply, anthropic) {
            (crate::render::Reply::Json(v), true) => kiln_providers::anthropic::parse_response(&v),
            (crate::render::Reply::Json(v), false) => {
                kiln_providers::openai::responses::parse_response(&v)
            }
            (crate::render::Reply::Stream(c), true) => {
                kiln_providers::anthropic::parse_sse(&c.concat(), &sink)
            }
            (crate::render::Reply::Stream(c), false) => {
                kiln_providers::openai::responses::parse_sse(&c.concat(), &sink)
            }
            (crate::render::Reply::Raw(_), _) => panic!("a raw reply"),
        }
        .expect("kiln reads the reply");
        assert_eq!(
            read.tool_calls[0].args,
            CallArgs::parsed(json!({"city": "Paris"}))
        );
        let replay = read.replay.clone().expect("the search is replayed");
        let messages = [
            first[0].clone(),
            Message::Assistant {
                content: read.text.clone(),
                tool_calls: read.tool_calls.clone(),
                replay: Some(replay),
            },
            Message::Tool {
                results: vec![ToolResult {
                    call_id: read.tool_calls[0].id.clone(),
                    name: "weather_lookup".into(),
                    content: "21".into(),
                    is_error: false,
                }],
            },
        ];
        let next = request(&messages, anthropic);
        check(&next, anthropic).expect("the search sent back is accepted");
        let text = next.to_string();
        let sent_back = [
            "srvtoolu_mock_0",
            "tool_search_tool_result",
            "tsc_mock_0",
            "tool_search_output",
        ];
        let expected = if anthropic {
            &sent_back[..2]
        } else {
            &sent_back[2..]
        };
        assert!(
            expected.iter().all(|s| text.contains(s)),
            "{anthropic} {stream}: {text}"
        );
    }
}
