//! The AG-UI door (`POST /v1/ag-ui/{agent}`): AG-UI's own client runs an agent with a server
//! tool, a front-end tool, state, a custom event and an approval interrupt resumed, every event
//! valid by `@ag-ui/core`'s schemas; and the door's walls over raw HTTP.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};

/// `tally` changes `ctx.state` and emits; `clean_up` needs `store`, which `helper` holds only
/// with a person's approval.
fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "helper.rhai",
        &format!(
            r#"tool("tally").description("Counts").handler(|a, ctx| {{
    ctx.state.count = (ctx.state.count ?? 0) + 1;
    emit("tallied", #{{ count: ctx.state.count }});
    ctx.state.count
}});
tool("clean_up").description("Cleans up").requires(["store"]).handler(|a| {{ store_set("k", "v", "1"); "cleaned" }});
agent("helper").provider("openai").model("m").base_url("{}/v1").tools(["tally", "clean_up"]).needs_approval(["store"]);"#,
            mock.url
        ),
    )])
}

/// Round 1: `tally` and the front end's `pick_color`; round 2: `clean_up`; round 3: the answer.
fn scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "tally", "args": {}}, {"name": "pick_color", "args": {}}]},
        {"tool_calls": [{"name": "clean_up", "args": {}}]},
        {"text": "All done in blue."}
    ]})
}

fn frontends() -> Option<String> {
    std::env::var("KILN_FRONTENDS").ok()
}

#[test]
#[ignore = "needs @ag-ui/client from npm in KILN_FRONTENDS (run by .ci/run)"]
fn frontends_the_ag_ui_client_runs_an_agent_through_a_front_end_tool_and_an_interrupt() {
    let modules = frontends().expect("KILN_FRONTENDS names the npm install of the front-end peers");
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let out = std::process::Command::new("node")
        .arg(repo().join("tests/peers/frontends/ag_ui_client.mjs"))
        .arg(format!("{}/v1/ag-ui/helper", serve.url))
        .env("KILN_FRONTENDS", modules)
        .output()
        .expect("node");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    assert_eq!(v["invalid"], json!([]), "every event is valid AG-UI: {v:#}");
    let runs = v["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{v:#}");
    // Run 1: the server tool ran, the front end's is pending.
    let first = &runs[0];
    assert_eq!(first["outcome"], "success", "{first:#}");
    assert_eq!(
        first["pending"].as_array().map(Vec::len),
        Some(1),
        "{first:#}"
    );
    let types: Vec<&str> = first["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(types.first(), Some(&"RUN_STARTED"));
    assert_eq!(types.last(), Some(&"RUN_FINISHED"));
    for t in [
        "STATE_SNAPSHOT",
        "STEP_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_RESULT",
        "STATE_DELTA",
        "CUSTOM",
        "STEP_FINISHED",
    ] {
        assert!(types.contains(&t), "{t} in {types:?}");
    }
    assert_eq!(
        first["customs"][0],
        json!({"name": "tallied", "value": {"count": 1}})
    );
    // Run 2: the next call needs a person: an interrupt, and a run without resume refused.
    let second = &runs[1];
    assert_eq!(second["outcome"], "interrupt", "{second:#}");
    assert_eq!(second["interrupts"][0]["reason"], "approval");
    // The call that asks is shown with its question, and not shown again when resumed.
    let second_types: Vec<&str> = second["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        second_types.contains(&"TOOL_CALL_START"),
        "{second_types:?}"
    );
    assert!(
        second["interrupts"][0]["toolCallId"].is_string(),
        "{second:#}"
    );
    assert!(
        v["refused"]
            .as_str()
            .is_some_and(|r| r.contains("interrupt")),
        "{v:#}"
    );
    // Run 3: resumed with the approval: the call ran and the answer came.
    let third = &runs[2];
    assert_eq!(third["outcome"], "success", "{third:#}");
    let types: Vec<&str> = third["types"]
        .as_array()
        .expect("types")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        types.contains(&"TOOL_CALL_RESULT") && types.contains(&"TEXT_MESSAGE_CONTENT"),
        "{types:?}"
    );
    assert_eq!(
        v["state"],
        json!({"count": 1}),
        "the state the tool set, by its delta"
    );
    assert_eq!(v["pendingInterrupts"], json!([]));
    let last = v["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["content"], "All done in blue.", "{v:#}");
    // The front end's answer reached the model.
    let bodies = mock.requests();
    let second_request = bodies[1]["body"].to_string();
    assert!(second_request.contains("blue"), "{second_request}");
}

#[test]
fn the_ag_ui_door_keeps_the_walls() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let serve = crate::frontends::serve_two_actors(dir.path());
    let url = |agent: &str| format!("{}/v1/ag-ui/{agent}", serve.url);
    let (ann, bob) = (crate::frontends::ANN, crate::frontends::BOB);
    let input = |run: &str| {
        json!({"threadId": "t", "runId": run, "state": {}, "tools": [], "context": [],
        "messages": [{"id": "u1", "role": "user", "content": "go"}]})
    };
    // No token: 401. An unknown agent: 404.
    let (status, _, _) = http("POST", &url("helper"), &[], Some(&input("r0")));
    assert_eq!(status, 401);
    let (status, _, text) = http("POST", &url("nobody"), &ann, Some(&input("r0")));
    assert_eq!(status, 404, "{text}");
    // A malformed input names its field.
    let mut bad = input("r0");
    bad["messages"][0]["role"] = json!("robot");
    let (status, _, text) = http("POST", &url("helper"), &ann, Some(&bad));
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("messages[0].role"), "{text}");
    let (status, _, text) = http("POST", &url("helper"), &ann, Some(&json!({"runId": "r"})));
    assert_eq!(status, 400);
    assert!(
        text.contains("threadId must be a non-empty string"),
        "{text}"
    );
    // A body over --max-body: 413.
    let mut big = input("r0");
    big["messages"][0]["content"] = json!("x".repeat(5000));
    let (status, _, _) = http("POST", &url("helper"), &ann, Some(&big));
    assert_eq!(status, 413);
    // Ann's run stops at an interrupt (after the front end's tool and its answer).
    let (status, _, body) = http("POST", &url("helper"), &ann, Some(&input("r1")));
    assert_eq!(status, 200, "{body}");
    let mut next = input("r2");
    next["tools"] =
        json!([{"name": "pick_color", "description": "d", "parameters": {"type": "object"}}]);
    let events: Vec<Value> = body
        .split("\n\n")
        .filter_map(|b| b.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("RUN_FINISHED")),
        "{body}"
    );
    let _ = next;
    // Bob cannot resume an interrupt that is not his: 404, and the run still waits.
    let resume = json!({"threadId": "t", "runId": "r9", "messages": [],
        "resume": [{"interruptId": "run_nothing/a1", "status": "resolved", "payload": {"approved": true}}]});
    let (status, _, text) = http("POST", &url("helper"), &bob, Some(&resume));
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("resume[0]"), "{text}");
    // Carl's ceiling has no `store`: the call that needs it is refused, nobody is asked.
    let (status, _, body) = http(
        "POST",
        &url("helper"),
        &crate::frontends::CARL,
        Some(&input("r3")),
    );
    assert_eq!(status, 200, "{body}");
    let events: Vec<Value> = body
        .split("\n\n")
        .filter_map(|b| b.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let last = events.last().cloned().unwrap_or_default();
    assert_eq!(
        last["type"], "RUN_ERROR",
        "refused, not an interrupt: {body}"
    );
    assert_eq!(last["code"], "capability", "{body}");
    let refused = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .any(|e| {
            e["content"]
                .as_str()
                .is_some_and(|c| c.contains("requires capabilities [store]"))
        });
    assert!(refused, "{body}");
}
