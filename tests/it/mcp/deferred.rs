//! `kiln mcp --defer PATTERN` (progressive discovery): the list holds the tools not deferred
//! and `search_tools`; a search finds deferred tools, which join that session's list with
//! `notifications/tools/list_changed` (stdio and an HTTP session); a deferred tool is callable
//! by name under the grants all along, and a stateless request searches without a session.

use crate::common::*;
use crate::mcp::mcp_stateless::request;
use crate::mcp::{McpHttp, StdioMcp};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

/// 120 tools: `greet`, `gh__create_issue`, `gh__secret` (needs `net`) and 117 more `gh__op_N`.
fn many_tools() -> String {
    let mut text = String::from(
        r#"
tool("greet").description("Greets someone by name").param("name", "string").handler(|args| `Hello, ${args.name}!`);
tool("gh__create_issue").description("Opens an issue in a GitHub repository")
    .param("repo", "string", #{ desc: "owner/name" }).param("title", "string")
    .handler(|args| `opened "${args.title}" in ${args.repo}`);
tool("gh__secret").description("Reads a secret of a repository").requires(["net"])
    .param("repo", "string").handler(|args| "s3cret");
"#,
    );
    for i in 0..117 {
        text.push_str(&format!(
            r#"tool("gh__op_{i}").description("Runs maintenance step {i} on a repository's branches, tags and releases")
    .param("repo", "string", #{{ desc: "owner/name of the repository" }}).param("step_{i}", "int", #{{ optional: true }})
    .handler(|args| "step {i} done");
"#
        ));
    }
    text
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The JSON of a call's text answer.
fn answer(call: &Value) -> Value {
    let text = call["result"]["content"][0]["text"].as_str().unwrap_or("");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{call}: {e}"))
}

fn found_names(search: &Value) -> Vec<String> {
    answer(search)["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect()
}

fn params(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

fn call(id: u32, name: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params(name, args)})
}

#[test]
fn mcp_deferred_tools_are_found_listed_and_called_over_stdio() {
    let scripts = Scripts::new(&[("tools.rhai", &many_tools())]);
    let base = ["--no-stdlib", "--scripts", "."];
    let mut full = StdioMcp::start(scripts.path(), &base);
    let all = full.rpc(1, "tools/list", json!({}));
    drop(full);
    let args = [&base[..], &["--defer", "gh__*"]].concat();
    let mut mcp = StdioMcp::start(scripts.path(), &args);
    mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let list = mcp.rpc(1, "tools/list", json!({}));
    assert_eq!(names(&list), ["greet", "search_tools"]);
    let (all_size, deferred_size) = (all.to_string().len(), list.to_string().len());
    println!(
        "tools/list with 120 tools: {all_size} bytes; with gh__* deferred: {deferred_size} bytes"
    );
    assert_eq!(names(&all).len(), 119, "gh__secret needs net");
    assert!(
        deferred_size * 20 < all_size,
        "{deferred_size} vs {all_size}"
    );

    // A deferred tool is callable by name before any search, as any call.
    let direct = mcp.rpc(2, "tools/call", params("gh__op_7", json!({"repo": "a/b"})));
    assert_eq!(
        direct["result"]["content"][0]["text"], "step 7 done",
        "{direct}"
    );
    let bad = mcp.rpc(3, "tools/call", params("gh__op_7", json!({"repo": 5})));
    assert_eq!(bad["result"]["isError"], true, "{bad}");

    // The client hears that its list changed before the search's answer.
    mcp.send(&call(
        4,
        "search_tools",
        json!({"query": "create an issue"}),
    ));
    let mut heard = Vec::new();
    let search = loop {
        let msg = mcp.next();
        if msg["id"] == 4 {
            break msg;
        }
        heard.push(msg["method"].clone());
    };
    assert!(
        heard.contains(&json!("notifications/tools/list_changed")),
        "{heard:?}"
    );
    let found = found_names(&search);
    assert_eq!(found[0], "gh__create_issue", "{search}");
    assert!(found.len() <= 5, "{found:?}");
    let hit = &answer(&search)["tools"][0];
    assert_eq!(
        hit["inputSchema"]["required"],
        json!(["repo", "title"]),
        "{hit}"
    );
    assert_eq!(hit["description"], "Opens an issue in a GitHub repository");

    let after = names(&mcp.rpc(5, "tools/list", json!({})));
    assert!(after.contains(&"gh__create_issue".to_string()), "{after:?}");
    assert!(
        after
            .iter()
            .all(|n| n == "greet" || n == "search_tools" || found.contains(n)),
        "{after:?}"
    );
    let opened = mcp.rpc(
        6,
        "tools/call",
        params("gh__create_issue", json!({"repo": "a/b", "title": "Bug"})),
    );
    assert_eq!(
        opened["result"]["content"][0]["text"], "opened \"Bug\" in a/b",
        "{opened}"
    );

    // Deferral changes no grant: an ungranted tool is neither found nor callable.
    let secret = mcp.rpc(
        7,
        "tools/call",
        params("search_tools", json!({"query": "secret"})),
    );
    assert!(found_names(&secret).is_empty(), "{secret}");
    let refused = mcp.rpc(
        8,
        "tools/call",
        params("gh__secret", json!({"repo": "a/b"})),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    drop(mcp);

    // Both calls are in the run log, as any MCP call.
    let out = kiln(
        &["logs", "--json", "--tool", "gh__create_issue"],
        scripts.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs:#}");
    let out = kiln(
        &["logs", "--json", "--tool", "search_tools"],
        scripts.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    assert_eq!(runs.as_array().map(Vec::len), Some(2), "{runs:#}");
}

/// POSTs one message in session `sid` (none for `initialize`); the session id and the answer.
fn post(url: &str, sid: &str, msg: &Value) -> (String, Value) {
    let mut headers = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    if !sid.is_empty() {
        headers.push(("mcp-session-id", sid));
    }
    let (status, got, text) = http("POST", url, &headers, Some(msg));
    assert!(status < 300, "{status}: {text}");
    let sid = got
        .iter()
        .find(|(k, _)| k == "mcp-session-id")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| sid.to_string());
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m.get("id").is_some())
        .unwrap_or(Value::Null);
    (sid, answer)
}

/// Opens the session's GET stream; its lines arrive on the channel once the stream is open.
fn listen(url: &str, sid: &str) -> std::sync::mpsc::Receiver<String> {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_once('/').expect("path");
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
    )
    .expect("send");
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    assert!(line.contains(" 200"), "{line}");
    // The headers, up to the blank line: the stream is open from here on.
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

#[test]
fn mcp_deferred_tools_over_http_per_session_and_stateless() {
    let scripts = Scripts::new(&[("tools.rhai", &many_tools())]);
    let server = McpHttp::start(scripts.path(), &["--scripts", ".", "--defer", "gh__*"], &[]);
    let url = server.url.as_str();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    let (sid, _) = post(url, "", &init);
    assert!(!sid.is_empty());
    post(
        url,
        &sid,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let events = listen(url, &sid);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(names(&post(url, &sid, &list).1), ["greet", "search_tools"]);

    let (_, search) = post(
        url,
        &sid,
        &call(2, "search_tools", json!({"query": "create issue"})),
    );
    assert_eq!(found_names(&search)[0], "gh__create_issue", "{search}");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = events
            .recv_timeout(left)
            .expect("list_changed on the session's stream");
        if line.contains("notifications/tools/list_changed") {
            break;
        }
    }
    let listed = names(&post(url, &sid, &list).1);
    assert!(
        listed.contains(&"gh__create_issue".to_string()),
        "{listed:?}"
    );
    let opened = post(
        url,
        &sid,
        &call(
            3,
            "gh__create_issue",
            json!({"repo": "a/b", "title": "Bug"}),
        ),
    )
    .1;
    assert_eq!(
        opened["result"]["content"][0]["text"], "opened \"Bug\" in a/b",
        "{opened}"
    );

    // Another session found nothing yet.
    let (other, _) = post(url, "", &init);
    assert_ne!(other, sid);
    assert_eq!(
        names(&post(url, &other, &list).1),
        ["greet", "search_tools"]
    );

    // A stateless (2026-07-28) request has no session to remember a search: it searches,
    // then calls what it found by name (its Mcp-Name header checked against the tool).
    let ask =
        |method: &str, params: Value| request(url, "raw", json!({}), "", method, params).message;
    assert_eq!(
        names(&ask("tools/list", json!({}))),
        ["greet", "search_tools"]
    );
    let found = ask(
        "tools/call",
        json!({"name": "search_tools", "arguments": {"query": "maintenance step 42"}}),
    );
    assert_eq!(found_names(&found)[0], "gh__op_42", "{found}");
    let ran = ask(
        "tools/call",
        json!({"name": "gh__op_42", "arguments": {"repo": "a/b"}}),
    );
    assert_eq!(ran["result"]["content"][0]["text"], "step 42 done", "{ran}");
    assert_eq!(
        names(&ask("tools/list", json!({}))),
        ["greet", "search_tools"]
    );
}

#[test]
fn mcp_defer_is_read_from_kiln_toml_and_does_not_go_with_code_mode() {
    let scripts = Scripts::new(&[
        ("tools.rhai", &many_tools()),
        ("kiln.toml", "[mcp]\ndefer = [\"gh__*\"]\n"),
    ]);
    let mut mcp = StdioMcp::start(scripts.path(), &["--no-stdlib", "--scripts", "."]);
    assert_eq!(
        names(&mcp.rpc(1, "tools/list", json!({}))),
        ["greet", "search_tools"]
    );
    drop(mcp);
    let out = kiln(&["mcp", "--code-mode"], scripts.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("[mcp] defer and code_mode do not go together"),
        "{}",
        stderr(&out)
    );
    let out = kiln(&["mcp", "--code-mode", "--defer", "x"], scripts.path());
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--defer"), "{}", stderr(&out));
}

/// The official Python SDK (tests/peers/mcp/mcp_deferred.py) as the client, over stdio and HTTP
/// (`.ci/run` runs it: `cargo test --test it peers -- --ignored`).
#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_deferred_tools_with_the_sdk_as_peers() {
    let scripts = Scripts::new(&[("tools.rhai", &many_tools())]);
    let argv = json!([
        kiln_bin(),
        "mcp",
        "--no-stdlib",
        "--scripts",
        ".",
        "--defer",
        "gh__*"
    ]);
    let server = McpHttp::start(scripts.path(), &["--scripts", ".", "--defer", "gh__*"], &[]);
    for target in [argv.to_string(), server.url.clone()] {
        let out = std::process::Command::new("python3")
            .arg(repo().join("tests/peers/mcp/mcp_deferred.py"))
            .args([&target, "open an issue", "gh__create_issue"])
            .arg(json!({"repo": "a/b", "title": "Bug"}).to_string())
            .current_dir(scripts.path())
            .output()
            .expect("python3");
        assert!(out.status.success(), "{target}: {}", stderr(&out));
        let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
        assert_eq!(v["tools"], json!(["greet", "search_tools"]), "{v}");
        assert_eq!(v["found"][0], "gh__create_issue", "{v}");
        let after = v["tools_after"].as_array().cloned().unwrap_or_default();
        assert!(after.contains(&json!("gh__create_issue")), "{v}");
        assert_eq!(
            v["called"],
            json!({"text": "opened \"Bug\" in a/b", "is_error": false}),
            "{v}"
        );
    }
}
