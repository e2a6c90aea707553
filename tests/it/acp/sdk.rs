//! `kiln acp` driven by the official ACP client, `@agentclientprotocol/sdk` (npm, in the
//! prefix KILN_ACP names; .ci/run installs it): its connection reads every message the door
//! sends against the protocol's types. #[ignore]d without it.

use super::*;
use crate::common::*;
use serde_json::{Value, json};

/// Runs tests/peers/acp/client.mjs `scenario` against `kiln acp helper` in `dir`: its report.
fn client(dir: &std::path::Path, scenario: &str) -> Value {
    let modules = std::env::var("KILN_ACP")
        .expect("KILN_ACP names the npm prefix of @agentclientprotocol/sdk");
    let out = std::process::Command::new("node")
        .arg(repo().join("tests/peers/acp/client.mjs"))
        .arg(scenario)
        .arg(kiln_bin())
        .args(["--scripts", &dir.display().to_string()])
        .args(["--db", &dir.join("k.db").display().to_string()])
        .args(["acp", "helper"])
        .current_dir(dir)
        .env("KILN_ACP", modules)
        .env("OPENAI_API_KEY", "sk-test")
        .output()
        .expect("node");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("one JSON object");
    assert_eq!(
        v["exit"], 0,
        "kiln acp exits cleanly when the client closes: {v:#}"
    );
    v
}

/// The updates of kind `kind`.
fn of<'a>(ups: &'a Value, kind: &str) -> Vec<&'a Value> {
    ups.as_array()
        .map(|a| a.iter().filter(|u| u["sessionUpdate"] == kind).collect())
        .unwrap_or_default()
}

/// The text of the agent's message chunks.
fn text(ups: &Value) -> String {
    of(ups, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[test]
#[ignore = "needs @agentclientprotocol/sdk from npm in KILN_ACP (run by .ci/run)"]
fn acp_sdk_a_prompt_streams_a_tool_call_and_its_update() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let v = client(dir.path(), "tool");
    assert_eq!(v["init"]["protocolVersion"], 1, "{v:#}");
    assert_eq!(v["init"]["agentCapabilities"]["loadSession"], true, "{v:#}");
    let turn = &v["turn"];
    assert_eq!(turn["stopReason"], "end_turn", "{v:#}");
    let ups = &turn["updates"];
    let call = of(ups, "tool_call");
    assert_eq!(call.len(), 1, "{v:#}");
    assert_eq!(
        (call[0]["title"].clone(), call[0]["status"].clone()),
        (json!("add"), json!("in_progress"))
    );
    let update = of(ups, "tool_call_update");
    assert_eq!(
        update.last().map(|u| u["status"].clone()),
        Some(json!("completed")),
        "{v:#}"
    );
    assert_eq!(
        update
            .last()
            .map(|u| u["content"][0]["content"]["text"].clone()),
        Some(json!("5"))
    );
    assert_eq!(text(ups), "The sum is 5.");
    // The loop's plan, as the SDK's client read it.
    let plan = of(ups, "plan");
    let last = plan.last().expect("a plan update");
    assert_eq!(last["entries"][1]["content"], "Call add", "{last}");
    assert_eq!(last["entries"][1]["status"], "completed", "{last}");
}

#[test]
#[ignore = "needs @agentclientprotocol/sdk from npm in KILN_ACP (run by .ci/run)"]
fn acp_sdk_a_permission_request_answered_both_ways() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let v = client(dir.path(), "permission");
    let asked = v["permissions"].as_array().expect("permissions");
    assert_eq!(asked.len(), 2, "{v:#}");
    assert_eq!(asked[0]["params"]["toolCall"]["title"], "clean_up", "{v:#}");
    // Allowed: the tool ran.
    let allowed = &v["allowed"];
    let last = of(&allowed["updates"], "tool_call_update")
        .last()
        .cloned()
        .cloned()
        .expect("an update");
    assert_eq!(
        (
            last["status"].clone(),
            last["content"][0]["content"]["text"].clone()
        ),
        (json!("completed"), json!("cleaned")),
        "{v:#}"
    );
    assert_eq!(text(&allowed["updates"]), "Done cleaning.");
    // Rejected: it did not run, and the model was told.
    let rejected = &v["rejected"];
    assert_eq!(rejected["stopReason"], "end_turn", "{v:#}");
    let last = of(&rejected["updates"], "tool_call_update")
        .last()
        .cloned()
        .cloned()
        .expect("an update");
    assert_eq!(last["status"], "failed", "{v:#}");
    let told: Vec<String> = mock
        .requests()
        .iter()
        .filter(|r| {
            r["body"]["messages"]
                .to_string()
                .contains("clean up, rejected")
        })
        .flat_map(|r| {
            r["body"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        !told.is_empty()
            && told
                .iter()
                .all(|t| t.contains("approv") && !t.contains("cleaned")),
        "{told:?}"
    );
}

#[test]
#[ignore = "needs @agentclientprotocol/sdk from npm in KILN_ACP (run by .ci/run)"]
fn acp_sdk_cancel_mid_run_stops_the_prompt() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let v = client(dir.path(), "cancel");
    assert_eq!(v["stopReason"], "cancelled", "{v:#}");
    assert!(v["ms"].as_u64().is_some_and(|ms| ms < 10_000), "{v:#}");
    assert_eq!(
        text(&v["updates"]),
        "",
        "the model was not asked again: {v:#}"
    );
}

#[test]
#[ignore = "needs @agentclientprotocol/sdk from npm in KILN_ACP (run by .ci/run)"]
fn acp_sdk_a_session_is_loaded_back_and_continued() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let first = client(dir.path(), "tool");
    let id = first["sessionId"].as_str().expect("sessionId");
    let v = client(dir.path(), &format!("load:{id}"));
    let replayed = &v["replayed"];
    let kinds: Vec<&Value> = replayed
        .as_array()
        .expect("replayed")
        .iter()
        .map(|u| &u["sessionUpdate"])
        .collect();
    assert_eq!(
        kinds,
        [
            &json!("user_message_chunk"),
            &json!("tool_call"),
            &json!("tool_call_update"),
            &json!("agent_message_chunk")
        ],
        "{v:#}"
    );
    assert_eq!(text(replayed), "The sum is 5.");
    assert_eq!(v["turn"]["stopReason"], "end_turn", "{v:#}");
    assert_eq!(text(&v["turn"]["updates"]), "Still 5.", "{v:#}");
}

#[test]
#[ignore = "needs @agentclientprotocol/sdk from npm in KILN_ACP (run by .ci/run)"]
fn acp_sdk_tools_read_and_write_through_the_clients_file_system() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    std::fs::write(dir.path().join("notes.txt"), "saved text").expect("notes");
    let v = client(dir.path(), "files");
    let files = v["files"].as_array().expect("files");
    assert_eq!(files.len(), 2, "{v:#}");
    assert!(
        files[0]["read"]["path"]
            .as_str()
            .is_some_and(|p| p.starts_with('/') && p.ends_with("/notes.txt")),
        "{v:#}"
    );
    assert_eq!(files[1]["write"]["content"], "UNSAVED DRAFT", "{v:#}");
    let done = of(&v["turn"]["updates"], "tool_call_update");
    assert_eq!(
        done.last()
            .map(|u| u["content"][0]["content"]["text"].clone()),
        Some(json!("edited: unsaved draft")),
        "{v:#}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).expect("notes"),
        "saved text",
        "the client's buffer was written, not the disk"
    );
}

#[test]
#[ignore = "needs @agentclientprotocol/sdk from npm in KILN_ACP (run by .ci/run)"]
fn acp_sdk_a_tool_runs_a_command_in_the_clients_terminal() {
    let mock = Mock::start(&scenario());
    let dir = scripts(&mock);
    let v = client(dir.path(), "terminal");
    let asked: Vec<&str> = v["terminals"]
        .as_array()
        .expect("terminals")
        .iter()
        .filter_map(|t| {
            t.as_object()
                .and_then(|o| o.keys().next())
                .map(String::as_str)
        })
        .collect();
    assert_eq!(
        asked,
        ["create", "waitForExit", "output", "release"],
        "{v:#}"
    );
    assert_eq!(v["terminals"][0]["create"]["command"], "cargo", "{v:#}");
    let call = of(&v["turn"]["updates"], "tool_call");
    assert_eq!(call[0]["kind"], "execute", "{v:#}");
    let done = of(&v["turn"]["updates"], "tool_call_update");
    assert_eq!(
        done.last()
            .map(|u| u["content"][0]["content"]["text"].clone()),
        Some(json!("exit 0: test result: ok")),
        "{v:#}"
    );
}
