//! `sample(prompt)`: a tool asks the model of the MCP client that called it
//! (`sampling/createMessage`), under capability `sampling`; refused clearly when the tool does
//! not declare it, the caller does not hold it, the client cannot sample, or no MCP client
//! called. The real binary over stdio JSON-RPC, answering the server's request by hand.

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const TOOLS: &str = r#"
tool("summarize")
    .description("Asks the client's model")
    .param("text", "string")
    .requires(["sampling"])
    .handler(|args| `Summary: ${sample(args.text, #{ system: "Be brief.", max_tokens: 50 })}`);

tool("undeclared")
    .description("Asks without declaring sampling")
    .param("text", "string")
    .handler(|args| sample("hi"));

tool("bad_options")
    .description("Asks with an unknown option")
    .param("text", "string")
    .requires(["sampling"])
    .handler(|args| sample("hi", #{ temperature: 2 }));
"#;

/// A `kiln mcp` session whose client declares `capabilities`; answers each `sampling/createMessage`
/// it receives with `reply` and returns every line the server sent, in order.
fn session(capabilities: Value, caps: &[&str], calls: &[(&str, &str)], reply: &str) -> Vec<Value> {
    let scripts = Scripts::new(&[("sample.rhai", TOOLS)]);
    let mut child = Command::new(kiln_bin())
        .args(["mcp", "--no-stdlib", "--scripts", "."])
        .args(caps)
        .current_dir(scripts.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kiln mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut next = || -> Value {
        let line = lines.next().expect("a line").expect("read");
        serde_json::from_str(&line).expect("JSON-RPC on stdout")
    };
    let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "raw", "version": "0"}}});
    writeln!(stdin, "{init}").expect("send");
    let mut seen = vec![next()];
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .expect("send");
    for (id, tool) in calls {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": {"text": "a long story"}}});
        writeln!(stdin, "{call}").expect("send");
        loop {
            let msg = next();
            seen.push(msg.clone());
            if msg["method"] == "sampling/createMessage" {
                let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "role": "assistant", "content": {"type": "text", "text": reply},
                    "model": "test-model", "stopReason": "endTurn"}});
                writeln!(stdin, "{answer}").expect("send");
            } else if msg["id"] == *id {
                break;
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    seen
}

fn answer_text(seen: &[Value], id: &str) -> (bool, String) {
    let r = &seen.iter().find(|v| v["id"] == id).expect("an answer")["result"];
    let text = r["content"][0]["text"].as_str().unwrap_or("").to_string();
    (r["isError"] == true, text)
}

#[test]
fn mcp_a_tool_asks_the_clients_model_with_sampling() {
    let seen = session(
        json!({"sampling": {}}),
        &["--caps", "sampling"],
        &[("ok", "summarize")],
        "It ends well.",
    );
    let asked = seen
        .iter()
        .find(|m| m["method"] == "sampling/createMessage")
        .expect("the server asked the client's model");
    let params = &asked["params"];
    assert_eq!(params["messages"][0]["role"], "user");
    assert_eq!(params["messages"][0]["content"]["text"], "a long story");
    assert_eq!(params["systemPrompt"], "Be brief.");
    assert_eq!(params["maxTokens"], 50);
    assert_eq!(
        answer_text(&seen, "ok"),
        (false, "Summary: It ends well.".to_string())
    );
}

#[test]
fn mcp_sampling_is_refused_clearly_when_it_cannot_or_may_not_happen() {
    // The client does not support sampling.
    let seen = session(
        json!({}),
        &["--caps", "sampling"],
        &[("no-client", "summarize")],
        "",
    );
    let (is_error, text) = answer_text(&seen, "no-client");
    assert!(is_error);
    assert!(
        text.contains(
            "sample(\"the client's model\") refused: the MCP client does not support sampling"
        ),
        "{text}"
    );
    assert!(seen.iter().all(|m| m["method"] != "sampling/createMessage"));

    // The tool does not declare it; the caller does not hold it; an unknown option.
    let seen = session(
        json!({"sampling": {}}),
        &["--caps", "sampling"],
        &[("undeclared", "undeclared"), ("bad", "bad_options")],
        "",
    );
    let (is_error, text) = answer_text(&seen, "undeclared");
    assert!(
        is_error && text.contains("does not declare capability \"sampling\""),
        "{text}"
    );
    let (is_error, _) = answer_text(&seen, "bad");
    assert!(is_error, "an unknown option fails the call");
    let seen = session(
        json!({"sampling": {}}),
        &[],
        &[("ungranted", "summarize")],
        "",
    );
    let (is_error, text) = answer_text(&seen, "ungranted");
    assert!(
        is_error && text.contains("requires capabilities [sampling]"),
        "{text}"
    );
}

#[test]
fn kiln_call_has_no_model_to_sample() {
    let scripts = Scripts::new(&[("sample.rhai", TOOLS)]);
    let out = kiln(
        &[
            "call",
            "summarize",
            r#"{"text": "x"}"#,
            "--no-stdlib",
            "--scripts",
            ".",
            "--caps",
            "sampling",
        ],
        scripts.path(),
    );
    assert!(!out.status.success());
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        all.contains(
            "only a tool called by an MCP client that supports sampling can ask its model"
        ),
        "{all}"
    );
}
