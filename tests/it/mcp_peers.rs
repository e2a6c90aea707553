//! The official Python MCP SDK (`mcp` 2.x) drives `kiln mcp` over stdio and HTTP, on the
//! 2025-11-25 handshake and the 2026-07-28 revision. Ignored by default (`pip install
//! mcp==2.3.0`); `.ci/run` installs it and runs them with `-- --ignored`.

use super::mcp::{McpHttp, TOOLS};
use crate::common::*;
use serde_json::{Value, json};

fn require_sdk() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp, mcp_types"])
        .output();
    assert!(
        sdk.is_ok_and(|o| o.status.success()),
        "the Python MCP SDK is missing: pip install mcp==2.3.0"
    );
}

/// Runs tests/peers/mcp_client.py against `target` and checks what the SDK saw.
fn drive(scripts: &Scripts, target: &str, mode: &str, token: Option<&str>) {
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo().join("tests/peers/mcp_client.py"))
        .args([target, mode, &scripts.path().display().to_string()])
        .current_dir(scripts.path());
    if let Some(t) = token {
        cmd.env("MCP_TOKEN", t);
    }
    let out = cmd.output().expect("python3");
    assert!(
        out.status.success(),
        "the SDK failed against kiln mcp ({mode}):\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
    assert_eq!(v["protocol"], mode);
    assert_eq!(
        v["tools"],
        json!(["greet"]),
        "ungranted tools are not listed"
    );
    assert_eq!(v["greet_schema"]["properties"]["name"]["type"], "string");
    assert_eq!(v["greet_read_only"], true);
    assert_eq!(v["ok"], json!({"text": "Hello, Ada!", "is_error": false}));
    assert_eq!(v["invalid"]["is_error"], true);
    let invalid = v["invalid"]["text"].as_str().unwrap_or("");
    assert!(invalid.contains("/name: 5 is not of type"), "{invalid}");
    assert_eq!(v["ungranted"]["is_error"], true);
    let refused = v["ungranted"]["text"].as_str().unwrap_or("");
    assert!(refused.contains("requires capabilities [net]"), "{refused}");
    let unknown = v["unknown"].as_str().unwrap_or("");
    assert!(
        unknown.contains("unknown tool \"no_such_tool\""),
        "{unknown}"
    );
    let expected_note = if mode == "2025-11-25" {
        "ToolListChangedNotification"
    } else {
        "ToolsListChanged"
    };
    assert_eq!(v["notified"], expected_note);
    assert_eq!(v["tools_after"], json!(["added", "greet"]));
}

fn stdio_target() -> String {
    json!([kiln_bin(), "mcp", "--no-stdlib", "--scripts", "."]).to_string()
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_sdk_over_stdio_legacy() {
    require_sdk();
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    drive(&scripts, &stdio_target(), "2025-11-25", None);
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_sdk_over_stdio_2026() {
    require_sdk();
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    drive(&scripts, &stdio_target(), "2026-07-28", None);
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_sdk_over_http_with_a_token() {
    require_sdk();
    for mode in ["2025-11-25", "2026-07-28"] {
        let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
        let server = McpHttp::start(
            scripts.path(),
            &["--scripts", ".", "--token-env", "KILN_MCP_TEST_TOKEN"],
            &[("KILN_MCP_TEST_TOKEN", "peer-token")],
        );
        drive(&scripts, &server.url, mode, Some("peer-token"));
    }
}
