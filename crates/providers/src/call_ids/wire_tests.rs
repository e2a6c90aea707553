//! Each wire's converter sends a transcript's tool-call ids as that wire accepts them: a call
//! written by another wire with an id this one refuses is sent mapped, its result under the
//! same mapped id, and an id the wire takes goes as it was.

use crate::call_ids::IdRule;
use crate::{
    CallArgs, Message, ModelRequest, Replay, ToolCall, ToolResult, anthropic, bedrock, gemini,
    ollama,
    openai::{chat, responses},
};
use serde_json::{Value, json};

const WEIRD: &str = "weird id/../\u{0}";
const PLAIN: &str = "call_plain-1";

/// A round trip with two calls, one with an id no strict wire takes, and their results.
fn transcript(replay: Option<Replay>) -> Vec<Message> {
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "look".into(),
        args: CallArgs::from_text("{\"q\": 1}"),
    };
    let result = |id: &str| ToolResult {
        call_id: id.into(),
        name: "look".into(),
        content: "found".into(),
        is_error: false,
    };
    vec![
        Message::user("hi"),
        Message::Assistant {
            replay,
            content: String::new(),
            tool_calls: vec![call(WEIRD), call(PLAIN)],
        },
        Message::Tool {
            results: vec![result(WEIRD), result(PLAIN)],
        },
    ]
}

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        model: "m".into(),
        system: None,
        messages: messages.into(),
        tools: Vec::new(),
        temperature: None,
        max_tokens: 10,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    }
}

/// The string at each of `paths` (JSON pointers) of `body`.
fn at(body: &Value, paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .map(|p| match body.pointer(p).and_then(Value::as_str) {
            Some(s) => s.to_string(),
            None => panic!("no id at {p} in {body:#}"),
        })
        .collect()
}

/// The ids found: the weird call's and its result's, then the plain call's and its result's.
fn check(rule: IdRule, ids: &[String], strict: bool) {
    let mapped = rule.wire_id(WEIRD).into_owned();
    assert_eq!(ids, [mapped.as_str(), &mapped, PLAIN, PLAIN], "{ids:?}");
    assert!(!mapped.contains('\0') && mapped.chars().count() <= rule.max_chars);
    if strict {
        let pattern = |id: &str| {
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
        };
        assert!(pattern(&mapped), "{mapped:?} is not ^[a-zA-Z0-9_-]+$");
    }
}

#[test]
fn anthropic_sends_ids_its_pattern_takes() {
    let body = anthropic::request_body(&request(&transcript(None)));
    let ids = at(
        &body,
        &[
            "/messages/1/content/0/id",
            "/messages/2/content/0/tool_use_id",
            "/messages/1/content/1/id",
            "/messages/2/content/1/tool_use_id",
        ],
    );
    check(IdRule::ANTHROPIC, &ids, true);
}

#[test]
fn bedrock_sends_tool_use_ids_its_pattern_takes() {
    let body = bedrock::request_body(&request(&transcript(None)));
    let ids = at(
        &body,
        &[
            "/messages/1/content/0/toolUse/toolUseId",
            "/messages/2/content/0/toolResult/toolUseId",
            "/messages/1/content/1/toolUse/toolUseId",
            "/messages/2/content/1/toolResult/toolUseId",
        ],
    );
    check(IdRule::BEDROCK, &ids, true);
}

#[test]
fn openai_chat_sends_ids_without_control_characters_in_forty() {
    let body = chat::request_body(&request(&transcript(None)), true);
    let ids = at(
        &body,
        &[
            "/messages/1/tool_calls/0/id",
            "/messages/2/tool_call_id",
            "/messages/1/tool_calls/1/id",
            "/messages/3/tool_call_id",
        ],
    );
    check(IdRule::OPENAI, &ids, false);
    // An id longer than the 40 characters the API takes is shortened, the same on both sides.
    let long = "x".repeat(60);
    let mut messages = transcript(None);
    if let Message::Assistant { tool_calls, .. } = &mut messages[1] {
        tool_calls[1].id.clone_from(&long);
    }
    if let Message::Tool { results } = &mut messages[2] {
        results[1].call_id.clone_from(&long);
    }
    let body = chat::request_body(&request(&messages), true);
    let ids = at(
        &body,
        &["/messages/1/tool_calls/1/id", "/messages/3/tool_call_id"],
    );
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[0].chars().count(), 40);
}

#[test]
fn responses_sends_call_ids_it_takes_even_in_a_replayed_item() {
    let body = responses::request_body(&request(&transcript(None)));
    let ids = at(
        &body,
        &[
            "/input/1/call_id",
            "/input/3/call_id",
            "/input/2/call_id",
            "/input/4/call_id",
        ],
    );
    check(IdRule::RESPONSES, &ids, false);
    // The wire's own items, replayed: a call id it sent too long is mapped like its output.
    let long = format!("call_{}", "y".repeat(70));
    let replay = Replay {
        wire: "openai-responses".into(),
        data: json!([{"type": "function_call", "id": "fc_1", "call_id": long, "name": "look",
                      "arguments": "{}"}]),
    };
    let mut messages = transcript(Some(replay));
    if let Message::Assistant { tool_calls, .. } = &mut messages[1] {
        tool_calls[0].id.clone_from(&long);
    }
    if let Message::Tool { results } = &mut messages[2] {
        results[0].call_id.clone_from(&long);
    }
    let body = responses::request_body(&request(&messages));
    let ids = at(
        &body,
        &["/input/1/id", "/input/1/call_id", "/input/3/call_id"],
    );
    assert_eq!(ids[0], "fc_1", "the replayed item is the one sent");
    assert_eq!(ids[1], ids[2]);
    assert_eq!(ids[1], IdRule::RESPONSES.wire_id(&long));
}

#[test]
fn gemini_sends_ids_without_control_characters() {
    let body = gemini::request_body(&request(&transcript(None)));
    let ids = at(
        &body,
        &[
            "/contents/1/parts/0/functionCall/id",
            "/contents/2/parts/0/functionResponse/id",
            "/contents/1/parts/1/functionCall/id",
            "/contents/2/parts/1/functionResponse/id",
        ],
    );
    check(IdRule::GEMINI, &ids, false);
}

#[test]
fn ollama_sends_ids_without_control_characters() {
    let body = ollama::request_body(&request(&transcript(None)));
    let ids = at(
        &body,
        &[
            "/messages/1/tool_calls/0/id",
            "/messages/2/tool_call_id",
            "/messages/1/tool_calls/1/id",
            "/messages/3/tool_call_id",
        ],
    );
    check(IdRule::OLLAMA, &ids, false);
}
