//! The AI SDK's UI message stream door (`POST /v1/ui-chat/{agent}`): the `ai` package reads
//! kiln's stream into the same UI message as a stream it made itself for the same turns, and a
//! headless chat (as `useChat` runs it) goes through a front-end tool and an approval; and the
//! door's walls over raw HTTP.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};

fn scripts(cruncher: &Mock, helper: &Mock) -> Scripts {
    Scripts::new(&[(
        "ui.rhai",
        &format!(
            r#"tool("crunch").description("Crunches rows").param("n", "integer").handler(|a| {{
    for i in 0..a.n {{ progress(i + 1, a.n); emit("row", #{{ i: i }}); }}
    a.n
}});
tool("clean_up").description("Cleans up").requires(["store"]).handler(|a| {{ store_set("k", "v", "1"); "cleaned" }});
agent("cruncher").provider("openai").model("m").base_url("{}/v1").tools(["crunch"]);
agent("helper").provider("openai").model("m").base_url("{}/v1").tools(["clean_up"]).needs_approval(["store"]);"#,
            cruncher.url, helper.url
        ),
    )])
}

fn cruncher() -> Mock {
    Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "crunch", "args": {"n": 2}}]},
        {"text": "done"}
    ]}))
}

/// Round 1: the front end's `pick_color`; round 2: `clean_up`; round 3: the answer.
fn helper() -> Mock {
    Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "pick_color", "args": {}}]},
        {"tool_calls": [{"name": "clean_up", "args": {}}]},
        {"text": "All done in blue."}
    ]}))
}

#[test]
#[ignore = "needs the ai package from npm in KILN_FRONTENDS (run by .ci/run)"]
fn frontends_the_ai_sdk_reads_kilns_ui_message_stream_like_its_own() {
    let modules = std::env::var("KILN_FRONTENDS").expect("KILN_FRONTENDS names the npm install");
    let (c, h) = (cruncher(), helper());
    let dir = scripts(&c, &h);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let out = std::process::Command::new("node")
        .arg(repo().join("tests/peers/frontends/ui_chat_client.mjs"))
        .arg(&serve.url)
        .env("KILN_FRONTENDS", modules)
        .output()
        .expect("node");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    assert_eq!(
        v["kiln"], v["sdk"],
        "the same UI message as the AI SDK's own: {v:#}"
    );
    assert_eq!(v["kiln"][1]["output"], 2, "{v:#}");
    let data: Vec<&str> = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .filter_map(|d| d["type"].as_str())
        .collect();
    assert_eq!(
        data,
        ["data-progress", "data-row", "data-row"],
        "one progress part, updated: {v:#}"
    );
    assert_eq!(v["data"][0]["data"]["done"], 2.0);
    assert!(v["metadata"]["kiln_run_id"].is_string(), "{v:#}");
    assert_eq!(v["errors"], json!([]), "{v:#}");
    assert!(
        v["first"]
            .as_array()
            .expect("first")
            .contains(&json!("tool-pick_color:input-available")),
        "{v:#}"
    );
    assert!(
        v["second"]
            .as_array()
            .expect("second")
            .contains(&json!("tool-clean_up:approval-requested")),
        "{v:#}"
    );
    let third = v["third"].as_array().expect("third");
    assert!(
        third.contains(&json!("tool-clean_up:output-available")),
        "{v:#}"
    );
    let clean_ups = third
        .iter()
        .filter(|s| s.as_str().is_some_and(|s| s.starts_with("tool-clean_up")))
        .count();
    assert_eq!(
        clean_ups, 1,
        "the approved call is one part, answered in place: {v:#}"
    );
    assert_eq!(v["answer"], "All done in blue.", "{v:#}");
    assert_eq!(
        v["messages"], 2,
        "one user message and one assistant message: {v:#}"
    );
}

#[test]
fn the_ui_chat_door_streams_with_its_header_and_keeps_the_walls() {
    let (c, h) = (cruncher(), helper());
    let dir = scripts(&c, &h);
    let serve = crate::frontends::serve_two_actors(dir.path());
    let url = |agent: &str| format!("{}/v1/ui-chat/{agent}", serve.url);
    let (ann, bob) = (crate::frontends::ANN, crate::frontends::BOB);
    let turn = json!({"id": "chat-1", "trigger": "submit-message",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]}]});
    let (status, headers, body) = http("POST", &url("cruncher"), &ann, Some(&turn));
    assert_eq!(status, 200, "{body}");
    assert!(
        headers.contains(&("x-vercel-ai-ui-message-stream".into(), "v1".into())),
        "{headers:?}"
    );
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    assert!(body.contains(r#""type":"data-row""#), "{body}");
    // Without a token: 401; an unknown agent: 404; a malformed message names its path; 413.
    assert_eq!(http("POST", &url("cruncher"), &[], Some(&turn)).0, 401);
    assert_eq!(http("POST", &url("nobody"), &ann, Some(&turn)).0, 404);
    let mut bad = turn.clone();
    bad["messages"][0]["parts"][0]["type"] = json!("video");
    let (status, _, text) = http("POST", &url("cruncher"), &ann, Some(&bad));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("messages[0].parts[0].type"), "{text}");
    let mut pending = turn.clone();
    pending["messages"] = json!([{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]},
        {"id": "a1", "role": "assistant", "parts": [{"type": "tool-pick_color", "toolCallId": "c1", "state": "input-available", "input": {}}]}]);
    let (status, _, text) = http("POST", &url("cruncher"), &ann, Some(&pending));
    assert_eq!(status, 400, "{text}");
    assert!(
        text.contains("messages[1].parts[0].state") && text.contains("addToolOutput"),
        "{text}"
    );
    let mut big = turn.clone();
    big["messages"][0]["parts"][0]["text"] = json!("x".repeat(5000));
    assert_eq!(http("POST", &url("cruncher"), &ann, Some(&big)).0, 413);
    // Ann's run waits for her approval; Bob answering it is a 404, and it still waits.
    let (status, _, body) = http(
        "POST",
        &url("helper"),
        &ann,
        Some(&json!({"id": "chat-2",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "go"}]},
            {"id": "a1", "role": "assistant", "parts": [{"type": "step-start"},
                {"type": "tool-pick_color", "toolCallId": "call_mock_0_0", "state": "output-available", "input": {}, "output": "blue"}]}]})),
    );
    assert_eq!(status, 200, "{body}");
    let asked: Value = body
        .split("\n\n")
        .filter_map(|b| b.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find(|c| c["type"] == "tool-approval-request")
        .unwrap_or_else(|| panic!("an approval request: {body}"));
    let answer = |approval: &Value| {
        json!({"id": "chat-2", "messages": [
        {"id": "a1", "role": "assistant", "parts": [{"type": "tool-clean_up", "toolCallId": asked["toolCallId"],
            "state": "approval-responded", "input": {}, "approval": {"id": approval, "approved": true}}]}]})
    };
    let (status, _, text) = http(
        "POST",
        &url("helper"),
        &bob,
        Some(&answer(&asked["approvalId"])),
    );
    assert_eq!(status, 404, "{text}");
    let (status, _, body) = http(
        "POST",
        &url("helper"),
        &ann,
        Some(&answer(&asked["approvalId"])),
    );
    assert_eq!(status, 200, "{body}");
    let text: String = body
        .split("\n\n")
        .filter_map(|b| b.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|c| c["type"] == "text-delta")
        .filter_map(|c| c["delta"].as_str().map(str::to_string))
        .collect();
    assert!(body.contains("tool-output-available"), "{body}");
    assert_eq!(text, "All done in blue.", "{body}");
}
