//! `kiln mcp` on the wire without an SDK: stdout carries only JSON-RPC, grants filter the list,
//! and the HTTP endpoint refuses foreign origins (403) and missing bearer tokens (401).

pub(crate) mod apps;
pub(crate) mod claude_code;
pub(crate) mod deferred;
pub(crate) mod mcp_conformance;
pub(crate) mod mcp_mount;
pub(crate) mod mcp_oauth;
pub(crate) mod mcp_output_peers;
pub(crate) mod mcp_peers;
pub(crate) mod mcp_sampling;
pub(crate) mod mcp_served_peers;
pub(crate) mod mcp_stateless;
pub(crate) mod mcp_tasks;
pub(crate) mod mcp_tool_output;
pub(crate) mod run_log;
pub(crate) mod served;

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

/// Tools every MCP test serves: one plain, one needing a capability.
pub const TOOLS: &str = r#"
tool("greet")
    .description("Greets someone by name")
    .param("name", "string", #{ desc: "Who to greet" })
    .handler(|args| `Hello, ${args.name}!`);

tool("fetch_secret")
    .description("Needs the network")
    .requires(["net"])
    .handler(|args| "secret");
"#;

/// A running `kiln mcp --http 127.0.0.1:0` (the real binary); killed on drop.
pub struct McpHttp {
    pub url: String,
    child: Child,
}

impl McpHttp {
    pub fn start(dir: &std::path::Path, extra: &[&str], envs: &[(&str, &str)]) -> McpHttp {
        let mut child = Command::new(kiln_bin())
            .args(["mcp", "--no-stdlib", "--http", "127.0.0.1:0"])
            .args(extra)
            .envs(envs.iter().copied())
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start kiln mcp");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("kiln mcp prints its address");
        let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "kiln mcp said: {line}"
        );
        McpHttp { url, child }
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs an `initialize` request with these extra headers; the status code.
pub(crate) fn post_initialize(url: &str, headers: &[(&str, &str)]) -> u16 {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_once('/').expect("path");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let mut req = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(req.as_bytes()).expect("send");
    // The status line is all we need; an SSE body may stay open.
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).expect("read status");
    let head = String::from_utf8_lossy(&buf[..n]).to_string();
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"))
}

#[test]
fn mcp_http_refuses_a_foreign_origin_with_403() {
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let server = McpHttp::start(scripts.path(), &["--scripts", "."], &[]);
    assert_eq!(
        post_initialize(&server.url, &[("Origin", "http://evil.example")]),
        403
    );
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap_or("")
        .split('/')
        .next()
        .unwrap_or("");
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(post_initialize(&server.url, &[("Origin", &own)]), 200);
    // A page on another port of this machine is another site.
    let other = format!("http://localhost:{}", port.parse::<u16>().unwrap_or(0) ^ 1);
    assert_eq!(post_initialize(&server.url, &[("Origin", &other)]), 403);
    // CLI clients send no Origin at all.
    assert_eq!(post_initialize(&server.url, &[]), 200);
}

#[test]
fn mcp_http_requires_the_bearer_token_when_configured() {
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let server = McpHttp::start(
        scripts.path(),
        &["--scripts", ".", "--token-env", "KILN_MCP_TEST_TOKEN"],
        &[("KILN_MCP_TEST_TOKEN", "s3cret-token")],
    );
    assert_eq!(post_initialize(&server.url, &[]), 401);
    assert_eq!(
        post_initialize(&server.url, &[("Authorization", "Bearer wrong-token")]),
        401
    );
    assert_eq!(
        post_initialize(&server.url, &[("Authorization", "Bearer s3cret-token")]),
        200
    );
}

#[test]
fn mcp_token_env_that_is_unset_is_a_clear_error() {
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let out = Command::new(kiln_bin())
        .args([
            "mcp",
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "KILN_MCP_UNSET_VAR",
        ])
        .env_remove("KILN_MCP_UNSET_VAR")
        .current_dir(scripts.path())
        .output()
        .expect("run kiln mcp");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--token-env KILN_MCP_UNSET_VAR: the variable is not set"),
        "{}",
        stderr(&out)
    );
}

/// Talks JSON-RPC to `kiln mcp` over stdio; returns every stdout line (each must be JSON).
pub fn stdio_session(dir: &std::path::Path, caps: &[&str], requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(kiln_bin())
        .args(["mcp", "--no-stdlib", "--scripts", ".", "-v"])
        .args(caps)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kiln mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut replies = Vec::new();
    for req in requests {
        writeln!(stdin, "{req}").expect("send");
        if req.get("id").is_none() {
            continue;
        }
        let line = lines.next().expect("a reply").expect("read");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
        replies.push(v);
    }
    drop(stdin);
    for line in lines {
        let line = line.expect("read");
        assert!(
            serde_json::from_str::<Value>(&line).is_ok(),
            "stdout carried a non-JSON line {line:?}"
        );
    }
    assert!(child.wait().expect("wait").success());
    replies
}

pub fn handshake(then: &[Value]) -> Vec<Value> {
    let mut reqs = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    reqs.extend_from_slice(then);
    reqs
}

/// The tool names of a `tools/list` answer.
pub fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn mcp_stdio_lists_only_granted_tools_and_refuses_the_others() {
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "fetch_secret", "arguments": {}}});
    let replies = stdio_session(scripts.path(), &[], &handshake(&[list.clone(), call]));
    assert_eq!(replies[0]["result"]["serverInfo"]["name"], "kiln");
    assert_eq!(names(&replies[1]), ["greet"]);
    let greet = &replies[1]["result"]["tools"][0];
    assert_eq!(greet["inputSchema"]["required"], json!(["name"]));
    assert_eq!(greet["annotations"]["readOnlyHint"], true);
    assert_eq!(replies[2]["result"]["isError"], true, "{}", replies[2]);
    let text = replies[2]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("requires capabilities [net]"), "{text}");

    let granted = stdio_session(scripts.path(), &["--caps", "net"], &handshake(&[list]));
    assert_eq!(names(&granted[1]), ["greet", "fetch_secret"]);
    assert_eq!(
        granted[1]["result"]["tools"][1]["annotations"]["openWorldHint"],
        true
    );
}

#[test]
fn mcp_stdio_invalid_arguments_are_an_error_result_naming_the_path() {
    let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
    let bad = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": 5}}});
    let good = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "greet", "arguments": {"name": "Ada"}}});
    let replies = stdio_session(scripts.path(), &[], &handshake(&[bad, good]));
    assert!(replies[1].get("error").is_none(), "{}", replies[1]);
    assert_eq!(replies[1]["result"]["isError"], true);
    let text = replies[1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("/name: 5 is not of type \"string\""),
        "{text}"
    );
    assert_eq!(replies[2]["result"]["content"][0]["text"], "Hello, Ada!");
}

/// Waits (up to 30 s) for a stderr line containing `what`.
pub fn wait_line(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(what) => return line,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no stderr line containing {what:?}");
}

/// `kiln mcp` on stdio, driven line by line: requests answered in order, stderr lines on a
/// channel (for [`wait_line`]).
pub struct StdioMcp {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    out: std::io::Lines<BufReader<std::process::ChildStdout>>,
    errs: std::sync::mpsc::Receiver<String>,
}

impl StdioMcp {
    /// Starts `kiln mcp ARGS` in `dir` and does the 2025-11-25 handshake.
    pub fn start(dir: &std::path::Path, args: &[&str]) -> StdioMcp {
        Self::start_declaring(dir, args, json!({}))
    }

    /// [`StdioMcp::start`] with the client declaring `capabilities` in its handshake.
    pub fn start_declaring(dir: &std::path::Path, args: &[&str], capabilities: Value) -> StdioMcp {
        let mut cmd = Command::new(kiln_bin());
        cmd.arg("mcp").args(args);
        Self::start_command(dir, cmd, capabilities)
    }

    /// [`StdioMcp::start`] under an address-space limit of `bytes` (`ulimit -v`): an
    /// allocation past it aborts the process, as on a server with a memory limit.
    pub fn start_limited(dir: &std::path::Path, args: &[&str], bytes: u64) -> StdioMcp {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!(
                "ulimit -v {} && exec \"$0\" mcp \"$@\"",
                bytes / 1024
            ))
            .arg(kiln_bin())
            .args(args);
        Self::start_command(dir, cmd, json!({}))
    }

    fn start_command(dir: &std::path::Path, mut cmd: Command, capabilities: Value) -> StdioMcp {
        let mut child = cmd
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kiln mcp");
        let (tx, errs) = std::sync::mpsc::channel();
        let pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let stdin = child.stdin.take();
        let out = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut mcp = StdioMcp {
            child,
            stdin,
            out,
            errs,
        };
        mcp.rpc(
            0,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "raw", "version": "0"}}),
        );
        mcp
    }

    /// Sends one message.
    pub fn send(&mut self, msg: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{msg}").expect("send");
    }

    /// Sends one line as it is (to test what kiln does with text that is not a message).
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}").expect("send");
    }

    /// Sends request `id` and returns its answer (notifications before it are skipped).
    pub fn rpc(&mut self, id: u32, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.out.next().expect("a message").expect("read");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// The next message, whatever it is.
    pub fn next(&mut self) -> Value {
        let line = self.out.next().expect("a message").expect("read");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    /// Waits for a stderr line containing `what`.
    pub fn wait_line(&self, what: &str) -> String {
        wait_line(&self.errs, what)
    }
}

impl Drop for StdioMcp {
    fn drop(&mut self) {
        // Closing stdin ends the session; kiln exits.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_a_cancelled_call_stops_its_handler() {
    let scripts = Scripts::new(&[(
        "slow.rhai",
        r#"tool("slow").description("Takes 10 s").handler(|args| { for i in 0..500 { sleep(0.02); } "done" });"#,
    )]);
    let mut mcp = StdioMcp::start(scripts.path(), &["--no-stdlib", "--scripts", ".", "-v"]);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow", "arguments": {}}});
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the user changed their mind"}});
    mcp.send(&call);
    mcp.send(&cancel);
    // The handler stops through its cancel flag long before its 10 s are up.
    let failed = mcp.wait_line("MCP call failed");
    assert!(failed.contains("\"cancelled\""), "{failed}");
}

#[test]
fn mcp_agents_are_offered_as_ask_tools_with_agents() {
    let greeter = r#"
tool("greet").description("Greets").param("name", "string").handler(|args| `Hello, ${args.name}!`);
agent("greeter").description("Greets whoever the prompt names").provider("script").tools(["greet"])
    .planner(|messages, tools| {
        let last = messages[messages.len() - 1];
        if last.role == "user" {
            let words = last.content.split(" ");
            return #{ tool_calls: [#{ name: "greet", args: #{ name: words[words.len() - 1] } }] };
        }
        #{ text: last.content }
    });
"#;
    let scripts = Scripts::new(&[("greeter.rhai", greeter)]);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let ask = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "ask_greeter", "arguments": {"prompt": "Please greet Ada"}}});
    let bad = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "ask_greeter", "arguments": {}}});
    let replies = stdio_session(
        scripts.path(),
        &["--agents"],
        &handshake(&[list.clone(), ask, bad]),
    );
    assert_eq!(names(&replies[1]), ["greet", "ask_greeter"]);
    let tool = &replies[1]["result"]["tools"][1];
    assert_eq!(tool["inputSchema"]["required"], json!(["prompt"]));
    assert_eq!(
        replies[2]["result"]["content"][0]["text"], "Hello, Ada!",
        "{}",
        replies[2]
    );
    assert_eq!(replies[3]["result"]["isError"], true);
    let text = replies[3]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("/prompt"), "{text}");
    // Without --agents, agents stay private.
    let plain = stdio_session(scripts.path(), &[], &handshake(&[list]));
    assert_eq!(names(&plain[1]), ["greet"]);
}

#[test]
fn mcp_ask_grants_are_refused_without_yes_when_the_client_cannot_ask() {
    let scripts = Scripts::new(&[(
        "remember.rhai",
        r#"tool("remember").description("Stores").requires(["store"]).handler(|args| { store_set("ns", "k", 1); "ok" });"#,
    )]);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "remember", "arguments": {}}});
    let asked = ["--caps", "store", "--ask", "store"];
    let refused = stdio_session(
        scripts.path(),
        &asked,
        &handshake(std::slice::from_ref(&call)),
    );
    assert_eq!(refused[1]["result"]["isError"], true);
    let text = refused[1]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("[store] needs a person's approval and this MCP client cannot ask")
            && text.contains("the server's operator may grant it without asking")
            && !text.contains("--yes")
            && !text.contains("--caps"),
        "{text}"
    );
    let yes = ["--caps", "store", "--ask", "store", "--yes"];
    let approved = stdio_session(scripts.path(), &yes, &handshake(&[call]));
    assert_eq!(approved[1]["result"]["content"][0]["text"], "ok");
    // The refused call is in the run log too, with its reason (the approved one beside it).
    let out = kiln(&["logs", "--json", "--tool", "remember"], scripts.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let runs: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let mut statuses: Vec<(String, bool)> = runs
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let error = r["error"].as_str().unwrap_or("");
            if r["status"] == "error" {
                assert!(error.contains("this MCP client cannot ask"), "{r:#}");
            }
            (
                r["status"].as_str().unwrap_or("").to_string(),
                r["tool_calls"][0]["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    statuses.sort();
    assert_eq!(
        statuses,
        vec![("error".to_string(), true), ("ok".to_string(), false)]
    );
}
