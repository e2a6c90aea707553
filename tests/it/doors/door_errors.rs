//! What callers of the doors see of a failure: its kind and the message meant for them, not
//! Rust type paths or the server's script paths; and JSON-RPC errors with the spec's codes.

use crate::common::post;
use crate::common::*;
use crate::doors::serve::Serve;
use crate::mcp::StdioMcp;
use serde_json::{Value, json};

const SCRIPTS: &str = r#"
tool("crash").handler(|a| { let list = [1]; list[5] });
agent("peeker").provider("script").planner(|m, t| { env("HOME"); #{ text: "never" } });
agent("crasher").provider("script").tools(["crash"]).planner(|m, t| {
    let last = m[m.len() - 1];
    if last.role == "user" { #{ tool_calls: [#{ name: "crash", args: #{} }] } } else { #{ text: last.content } }
});
"#;

#[test]
fn run_reports_over_http_carry_no_type_paths_or_script_paths() {
    let s = Scripts::new(&[("a.rhai", SCRIPTS)]);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &[], &[]);
    let root = s.path().display().to_string();
    let url = format!("{}/v1/runs", serve.url);
    let (status, run) = post(&url, &json!({"agent": "peeker", "input": "x"}), &[]);
    assert_eq!(status, 200, "{run}");
    let text = run.to_string();
    assert_eq!(run["status"], "failed", "{run}");
    assert!(!text.contains("kiln::"), "{text}");
    assert!(!text.contains(&root), "{text}");
    // The message still says what went wrong.
    assert!(
        text.contains("host functions can only be called while a tool runs"),
        "{text}"
    );
    let (_, run) = post(&url, &json!({"agent": "crasher", "input": "x"}), &[]);
    let text = run.to_string();
    assert!(text.contains("Tool failed (runtime)"), "{text}");
    assert!(!text.contains(&root) && !text.contains("detail"), "{text}");
    // Chat Completions errors too.
    let (status, err) = post(
        &format!("{}/v1/chat/completions", serve.url),
        &json!({"model": "peeker", "messages": [{"role": "user", "content": "x"}]}),
        &[],
    );
    assert_eq!(status, 500, "{err}");
    let text = err.to_string();
    assert!(!text.contains("kiln::") && !text.contains(&root), "{text}");
    // The operator's log keeps the whole error.
    let mut serve = serve;
    let _ = serve.child.kill();
    let (_, log) = serve.wait_exit(10);
    assert!(log.contains(&root), "{log}");
}

#[test]
fn json_rpc_errors_use_the_specs_codes_over_stdio_and_http() {
    let s = Scripts::new(&[("a.rhai", SCRIPTS)]);
    let mut mcp = StdioMcp::start(s.path(), &["--scripts", "."]);
    mcp.send_raw("{bad json");
    let e = mcp.next();
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{e}"
    );
    let e = mcp.rpc(5, "tools/call", json!({"nome": "crash"}));
    assert_eq!(e["error"]["code"], -32602, "{e}");
    // A line over the limit gets an answer, and the session goes on.
    mcp.send_raw(&format!("{{\"x\":\"{}\"}}", "a".repeat(17 << 20)));
    let e = mcp.next();
    assert_eq!(e["error"]["code"], -32600, "{e}");
    assert!(mcp.rpc(6, "ping", json!({})).get("result").is_some());

    let mcp = crate::mcp::McpHttp::start(s.path(), &["--scripts", "."], &[]);
    let url = mcp.url.clone();
    let (status, body) = raw_post(&url, "{bad");
    drop(mcp);
    let e: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        (e["id"].clone(), e["error"]["code"].clone()),
        (Value::Null, json!(-32700)),
        "{body}"
    );
}

/// POSTs `body` as is with `content-type: application/json`; the status and body.
fn raw_post(url: &str, body: &str) -> (u16, String) {
    let headers = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    let (status, _, body) = crate::common::http_raw("POST", url, &headers, body);
    (status, body)
}
