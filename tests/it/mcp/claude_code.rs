//! The real Claude Code CLI (pinned 2.1.197) drives kiln end to end: its model is `kiln mock`
//! and its tools come from `kiln mcp` over stdio. The mock asks for `mcp__kiln__calculator`
//! (the stdlib calculator) and then answers in text; the test checks Claude Code's JSON
//! result, the `tool_result` it sent back to the model, and kiln's run log of the call. This
//! guards what Claude Code relies on: `/v1/messages?beta=true` with streaming and a
//! mid-conversation `system` message on the mock, and the MCP stdio handshake, tool listing
//! and calls on `kiln mcp`. Ignored by default; `.ci/run` installs Claude Code and runs it
//! with `-- --ignored`. All traffic stays on 127.0.0.1 and Claude Code gets a temp HOME.

use crate::common::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn require_claude_code() -> PathBuf {
    let path = std::env::var_os("KILN_CLAUDE_CODE").map(PathBuf::from);
    let path = path.expect("set KILN_CLAUDE_CODE to Claude Code's `claude` binary (see .ci/run)");
    assert!(
        path.is_file(),
        "KILN_CLAUDE_CODE: no file {}",
        path.display()
    );
    path
}

#[test]
#[ignore = "needs Claude Code: npm install @anthropic-ai/claude-code@2.1.197 (run by .ci/run)"]
fn claude_code_calls_a_kiln_mcp_tool_against_kiln_mock() {
    let claude = require_claude_code();
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "mcp__kiln__calculator", "args": {"expression": "2 + 3"}}]},
        {"text": "The sum is 5."},
    ]}));
    let tmp = tempfile::tempdir().expect("tempdir");
    let (home, cwd, scripts) = (
        tmp.path().join("home"),
        tmp.path().join("cwd"),
        tmp.path().join("scripts"),
    );
    for dir in [&home, &cwd, &scripts] {
        std::fs::create_dir(dir).expect("mkdir");
    }
    let db = tmp.path().join("k.db");
    let config = tmp.path().join("mcp.json");
    let server = json!({"type": "stdio", "command": kiln_bin(), "args": [
        "mcp", "--scripts", scripts, "--workspace", scripts, "--db", db,
    ]});
    let servers = json!({"mcpServers": {"kiln": server}});
    std::fs::write(&config, servers.to_string()).expect("write the MCP config");

    let mut child = Command::new(claude)
        .args(["-p", "What is 2 + 3? Use the calculator."])
        .args(["--output-format", "json", "--strict-mcp-config"])
        .args(["--allowedTools", "mcp__kiln__calculator", "--mcp-config"])
        .arg(config)
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", &mock.url)
        .env("ANTHROPIC_API_KEY", TEST_KEY)
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        // Anything not sent to the mock directly goes to it as a proxy (and gets a 404).
        .env("HTTPS_PROXY", &mock.url)
        .env("HTTP_PROXY", &mock.url)
        .env("NO_PROXY", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start claude");
    // A safety net only: the run takes well under a second.
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait for claude").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("claude output");
    let said = format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(&out),
        stderr(&out)
    );
    assert!(out.status.success(), "claude failed: {said}");
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("claude's JSON result");
    assert_eq!(v["result"], "The sum is 5.", "{said}");
    assert_eq!(v["is_error"], false, "{said}");
    assert_eq!(v["permission_denials"], json!([]), "{said}");

    // What Claude Code sent the model: the kiln tool offered, then its result.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let tools = requests[0]["body"]["tools"].as_array().expect("tools");
    let calculator = |t: &Value| t["name"] == "mcp__kiln__calculator";
    assert!(tools.iter().any(calculator), "not offered: {tools:#?}");
    let messages = requests[1]["body"]["messages"]
        .as_array()
        .expect("messages");
    let result = messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .find(|b| b["type"] == "tool_result")
        .unwrap_or_else(|| panic!("no tool_result in the second request: {messages:#?}"));
    assert_eq!(result["tool_use_id"], "toolu_mock_0_0", "{result}");
    assert_ne!(result["is_error"], true, "{result}");
    assert!(result["content"].to_string().contains('5'), "{result}");

    // kiln's run log of the call, in the database `kiln mcp` wrote.
    let logs = kiln(&["logs", "--json", "--db", &db.display().to_string()], &cwd);
    assert!(logs.status.success(), "kiln logs: {}", stderr(&logs));
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("kiln logs --json");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs:#}");
    let run = &runs[0];
    assert_eq!(run["status"], "ok", "{run:#}");
    assert_eq!(run["actor"], "mcp:claude-code", "{run:#}");
    assert_eq!(
        run["tool_calls"].as_array().map(Vec::len),
        Some(1),
        "{run:#}"
    );
    let call = &run["tool_calls"][0];
    assert_eq!(call["name"], "calculator", "{run:#}");
    assert_eq!(call["args"], json!({"expression": "2 + 3"}), "{run:#}");
    assert_eq!(call["outcome"]["result"], 5.0, "{run:#}");
}
