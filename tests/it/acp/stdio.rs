//! `kiln acp` driven from Rust over its stdio with JSON lines: initialize, a session, a prompt
//! streamed with its tool call, approvals both ways, cancel, a session loaded back, and
//! malformed requests answered with errors that name the parameter.

use super::*;
use crate::common::*;
use serde_json::{Value, json};

#[test]
fn acp_initialize_then_a_prompt_streams_its_tool_call_and_answer() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start(dir.path());
    let (_, init) = acp.request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
        "",
    );
    let r = &init["result"];
    assert_eq!(r["protocolVersion"], 1, "{init}");
    assert_eq!(r["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(
        r["agentCapabilities"]["promptCapabilities"]["image"], true,
        "{init}"
    );
    assert_eq!(r["authMethods"], json!([]), "{init}");
    let (_, new) = acp.request(
        2,
        "session/new",
        json!({"cwd": "/tmp", "mcpServers": []}),
        "",
    );
    let id = new["result"]["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let (seen, answer) = acp.request(3, "session/prompt", prompt(&id, "add 2 and 3"), "");
    assert_eq!(
        answer["result"],
        json!({"stopReason": "end_turn"}),
        "{answer}"
    );
    assert!(
        seen.iter().all(|m| m["params"]["sessionId"] == json!(id)),
        "{seen:#?}"
    );
    let ups = updates(&seen);
    let call = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("a tool_call");
    assert_eq!(call["title"], "add", "{call}");
    assert_eq!(call["kind"], "other", "add needs no capability: {call}");
    assert_eq!(call["rawInput"], json!({"a": 2, "b": 3}), "{call}");
    // The loop's rounds and calls as the editor's plan, all done at the end.
    let plan = ups
        .iter()
        .rfind(|u| u["sessionUpdate"] == "plan")
        .expect("a plan");
    let entries: Vec<(&str, &str)> = plan["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            (
                e["content"].as_str().unwrap_or(""),
                e["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        entries,
        [
            ("Round 1: ask the model", "completed"),
            ("Call add", "completed"),
            ("Round 2: ask the model", "completed")
        ],
        "{plan}"
    );
    let done = ups
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .expect("the call completed");
    assert_eq!(done["toolCallId"], call["toolCallId"]);
    assert_eq!(done["content"][0]["content"]["text"], "5", "{done}");
    let text: String = ups
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "The sum is 5.");
    assert!(acp.close().success());
}

#[test]
fn acp_malformed_requests_are_answered_with_errors_naming_the_parameter() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start(dir.path());
    acp.send_raw("this is not json");
    assert_eq!(acp.next()["error"]["code"], -32700);
    acp.send_raw(r#"[{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]"#);
    let batch = acp.next();
    assert_eq!(
        (batch["id"].clone(), batch["error"]["code"].clone()),
        (Value::Null, json!(-32600))
    );
    acp.send_raw(r#"{"jsonrpc": "1.0", "id": 7, "method": "initialize"}"#);
    assert_eq!(acp.next()["error"]["code"], -32600);
    acp.send_raw(r#"{"jsonrpc": "2.0", "id": {"no": 1}, "method": "initialize"}"#);
    assert_eq!(acp.next()["error"]["code"], -32600);
    let bad = |acp: &mut Acp, id: u64, method: &str, params: Value| {
        let (_, a) = acp.request(id, method, params, "");
        assert!(a.get("result").is_none(), "{a}");
        a["error"].clone()
    };
    let e = bad(
        &mut acp,
        10,
        "initialize",
        json!({"protocolVersion": "one"}),
    );
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["data"]["path"], "params.protocolVersion", "{e}");
    let id = acp.new_session();
    let e = bad(
        &mut acp,
        11,
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(e["data"]["path"], "params.cwd", "{e}");
    let e = bad(&mut acp, 12, "session/new", json!({"cwd": "/tmp"}));
    assert_eq!(e["data"]["path"], "params.mcpServers", "{e}");
    let e = bad(&mut acp, 13, "session/prompt", json!({"prompt": []}));
    assert_eq!(e["data"]["path"], "params.sessionId", "{e}");
    let e = bad(
        &mut acp,
        14,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "text"}, {"type": "video"}]}),
    );
    assert_eq!(e["data"]["path"], "params.prompt[0].text", "{e}");
    let e = bad(
        &mut acp,
        15,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "video"}]}),
    );
    assert_eq!(e["data"]["path"], "params.prompt[0].type", "{e}");
    assert!(e["message"].as_str().unwrap_or("").contains("video"), "{e}");
    let e = bad(
        &mut acp,
        16,
        "session/prompt",
        json!({"sessionId": id, "prompt": [{"type": "image", "data": "%%%", "mimeType": "image/png"}]}),
    );
    assert_eq!(e["data"]["path"], "params.prompt[0].data", "{e}");
    let e = bad(&mut acp, 17, "session/prompt", prompt("acp-nobody", "hi"));
    assert_eq!(
        (e["code"].clone(), e["data"]["path"].clone()),
        (json!(-32002), json!("params.sessionId")),
        "{e}"
    );
    let e = bad(
        &mut acp,
        18,
        "session/load",
        json!({"sessionId": "acp-nobody", "cwd": "/tmp", "mcpServers": []}),
    );
    assert_eq!(e["code"], -32002, "{e}");
    let e = bad(&mut acp, 19, "session/set_mode", json!({}));
    assert_eq!(e["code"], -32601, "{e}");
    let e = bad(&mut acp, 20, "authenticate", json!({"methodId": "oauth"}));
    assert_eq!(e["data"]["path"], "params.methodId", "{e}");
    // An answer to nothing, a notification of no session: ignored; the door still works.
    acp.send_raw(r#"{"jsonrpc": "2.0", "id": 999, "result": {}}"#);
    acp.send_raw(r#"{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}}"#);
    let (_, answer) = acp.request(21, "session/prompt", prompt(&id, "add 2 and 3"), "");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(acp.close().success());
}

/// The tool messages of the mock's requests whose conversation starts with `first`.
fn tool_results(mock: &Mock, first: &str) -> Vec<String> {
    mock.requests()
        .iter()
        .filter(|r| r["body"]["messages"].to_string().contains(first))
        .flat_map(|r| {
            r["body"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect()
}

#[test]
fn acp_an_approval_is_asked_in_the_editor_and_its_answer_decides_the_call() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start(dir.path());
    let id = acp.new_session();
    let (seen, answer) = acp.request(
        3,
        "session/prompt",
        prompt(&id, "clean up please"),
        "reject_once",
    );
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let ask = seen
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .expect("a permission request");
    let kinds: Vec<&Value> = ask["params"]["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("allow_once"),
            &json!("allow_always"),
            &json!("reject_once")
        ]
    );
    assert_eq!(ask["params"]["toolCall"]["title"], "clean_up", "{ask}");
    let ups = updates(&seen);
    assert!(
        ups.iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed"),
        "{ups:#?}"
    );
    let told = tool_results(&mock, "clean up please");
    assert!(
        told.iter().any(|t| t.contains("approv")),
        "the model is told: {told:?}"
    );
    assert!(!told.iter().any(|t| t.contains("cleaned")), "{told:?}");
    // Allowed always: the call runs, and the next prompt of the session is not asked again.
    let (seen, _) = acp.request(
        4,
        "session/prompt",
        prompt(&id, "clean up again"),
        "allow_always",
    );
    let ups = updates(&seen);
    assert!(
        ups.iter()
            .any(|u| u["status"] == "completed" && u["content"][0]["content"]["text"] == "cleaned"),
        "{ups:#?}"
    );
    let (seen, _) = acp.request(
        5,
        "session/prompt",
        prompt(&id, "clean up a third time"),
        "reject_once",
    );
    assert!(
        !seen
            .iter()
            .any(|m| m["method"] == "session/request_permission"),
        "{seen:#?}"
    );
    assert!(
        updates(&seen).iter().any(|u| u["status"] == "completed"),
        "{seen:#?}"
    );
}

#[test]
fn acp_cancel_ends_the_running_prompt_as_cancelled() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start(dir.path());
    let id = acp.new_session();
    acp.send_raw(&json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt(&id, "slow work")}).to_string());
    loop {
        let v = acp.next();
        assert!(v.get("id").is_none(), "answered before the cancel: {v}");
        if v["params"]["update"]["sessionUpdate"] == "tool_call_update" {
            break;
        }
    }
    let started = std::time::Instant::now();
    acp.send_raw(
        &json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": id}})
            .to_string(),
    );
    let answer = loop {
        let v = acp.next();
        if v["id"] == 3 {
            break v;
        }
    };
    assert_eq!(
        answer["result"],
        json!({"stopReason": "cancelled"}),
        "{answer}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // The session takes the next prompt.
    let (_, again) = acp.request(4, "session/prompt", prompt(&id, "add 2 and 3"), "");
    assert!(again.get("result").is_some(), "{again}");
}

#[test]
fn acp_a_session_is_loaded_back_replayed_and_continued() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut first = Acp::start(dir.path());
    let id = first.new_session();
    let (_, answer) = first.request(3, "session/prompt", prompt(&id, "add 2 and 3"), "");
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert!(first.close().success());
    // Another connection (the editor restarted): the session from the database.
    let mut second = Acp::start(dir.path());
    let (_, init) = second.request(1, "initialize", json!({"protocolVersion": 1}), "");
    assert_eq!(init["result"]["agentCapabilities"]["loadSession"], true);
    let (seen, loaded) = second.request(
        2,
        "session/load",
        json!({"sessionId": id, "cwd": "/tmp", "mcpServers": []}),
        "",
    );
    assert_eq!(loaded["result"], json!({}), "{loaded}");
    let kinds: Vec<String> = updates(&seen)
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ],
        "{seen:#?}"
    );
    let ups = updates(&seen);
    assert_eq!(ups[0]["content"]["text"], "add 2 and 3");
    assert_eq!(ups[3]["content"]["text"], "The sum is 5.");
    let (seen, answer) = second.request(3, "session/prompt", prompt(&id, "and again?"), "");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let text: String = updates(&seen)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(text, "Still 5.");
    let last = mock.requests().last().cloned().expect("a request");
    assert!(
        last["body"]["messages"]
            .to_string()
            .contains("The sum is 5."),
        "the history went with it: {last}"
    );
}

#[test]
fn acp_the_models_reasoning_is_a_thought_chunk() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let mut acp = Acp::start_agent(dir.path(), "thinker");
    let id = acp.new_session();
    let (seen, answer) = acp.request(3, "session/prompt", prompt(&id, "think: 2 + 3?"), "");
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    let ups = updates(&seen);
    let kinds: Vec<&str> = ups
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .filter(|k| k.ends_with("_chunk"))
        .collect();
    // The reasoning is read from the whole reply, so it follows the text streamed with it.
    assert_eq!(
        kinds,
        ["agent_message_chunk", "agent_thought_chunk"],
        "{ups:#?}"
    );
    assert_eq!(
        ups.iter()
            .find(|u| u["sessionUpdate"] == "agent_thought_chunk")
            .map(|u| u["content"].clone()),
        Some(json!({"type": "text", "text": "Two and three make five."}))
    );
    assert!(acp.close().success());
}
