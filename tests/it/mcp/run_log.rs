//! Every call that reaches kiln over MCP is in the run log, beside `kiln call`'s; the client
//! configuration the README gives serves the scripts and keeps the log in the workspace.

use crate::common::*;
use crate::mcp::{TOOLS, handshake, names, stdio_session};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[test]
fn mcp_calls_and_kiln_call_are_in_the_run_log() {
    // Every door keeps the run log: a call made over MCP (valid or not) and one made with
    // `kiln call` each appear in `kiln logs` as a `call:TOOL` run with its tool call.
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": 5}}});
    let good = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "Ada"}}});
    stdio_session(scripts.path(), &[], &handshake(&[bad, good]));
    let direct = kiln(
        &[
            "call",
            "greet",
            r#"{"name": "Bo"}"#,
            "--no-stdlib",
            "--scripts",
            ".",
        ],
        scripts.path(),
    );
    assert!(direct.status.success(), "{}", stderr(&direct));
    let out = kiln(&["logs", "--json", "--tool", "greet"], scripts.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let runs = runs.as_array().cloned().unwrap_or_default();
    assert_eq!(runs.len(), 3, "{runs:#?}");
    let mut seen: Vec<(String, bool, Value)> = runs
        .iter()
        .map(|r| {
            assert_eq!(r["agent"], "call:greet", "{r:#}");
            // Who each call acted for: the MCP client by the name it gave, nobody for the CLI.
            let actor = if r["tool_calls"][0]["args"]["name"] == "Bo" {
                Value::Null
            } else {
                json!("mcp:raw")
            };
            assert_eq!(r["actor"], actor, "{r:#}");
            let call = &r["tool_calls"][0];
            (
                r["status"].as_str().unwrap_or("").to_string(),
                call["is_error"].as_bool().unwrap_or(false),
                call["args"].clone(),
            )
        })
        .collect();
    let text = kiln(&["logs", "--tool", "greet"], scripts.path());
    assert_eq!(
        stdout(&text).matches(" for mcp:raw ").count(),
        2,
        "{}",
        stdout(&text)
    );
    seen.sort_by_key(|s| s.2.to_string());
    assert_eq!(
        seen,
        vec![
            ("ok".to_string(), false, json!({"name": "Ada"})),
            ("ok".to_string(), false, json!({"name": "Bo"})),
            ("error".to_string(), true, json!({"name": 5})),
        ]
    );
}

/// The MCP chapter's client configuration, as a client runs it: started in an unrelated folder with
/// the paths filled in, it lists the scripts' granted tools and keeps `.kiln/` in the workspace.
#[test]
fn readme_mcp_client_configuration_serves_the_scripts_over_stdio() {
    let doc = std::fs::read_to_string(repo().join("docs/mcp.md")).expect("docs/mcp.md");
    let section = doc
        .split("## Use kiln tools from Claude Code, Cursor or any MCP client")
        .nth(1)
        .expect("the docs/mcp.md section");
    let block = section
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("the configuration block");
    let config: Value = serde_json::from_str(block).expect("the snippet is JSON");
    let kiln_cfg = &config["mcpServers"]["kiln"];
    assert_eq!(kiln_cfg["command"], "kiln");
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let project = tempfile::tempdir().expect("project");
    let elsewhere = tempfile::tempdir().expect("cwd");
    let args: Vec<String> = kiln_cfg["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| {
            a.as_str()
                .expect("string arg")
                .replace("/path/to/scripts", &scripts.path().display().to_string())
                .replace("/path/to/project", &project.path().display().to_string())
        })
        .collect();
    let mut child = Command::new(kiln_bin())
        .args(&args)
        .arg("--no-stdlib")
        .current_dir(elsewhere.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kiln as the docs configure it");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut list = Value::Null;
    for req in handshake(&[json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]) {
        writeln!(stdin, "{req}").expect("send");
        if req.get("id").is_some() {
            let line = lines.next().expect("a reply").expect("read");
            list = serde_json::from_str(&line).expect("JSON-RPC on stdout");
        }
    }
    drop(stdin);
    assert!(child.wait().expect("wait").success());
    assert_eq!(names(&list), ["greet", "fetch_secret"], "{list}");
    assert!(
        project.path().join(".kiln").is_dir(),
        "the run log lives in the workspace"
    );
    assert!(
        !elsewhere.path().join(".kiln").exists(),
        "nothing lands in the client's folder"
    );
}
