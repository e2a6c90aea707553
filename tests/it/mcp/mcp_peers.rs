//! The official Python MCP SDK (`mcp` 2.x) drives `kiln mcp` over stdio and HTTP, on the
//! 2025-11-25 handshake and the 2026-07-28 revision; and a server written with it is mounted
//! into an agent run against `kiln mock`, over stdio and HTTP. Ignored by default (`pip install
//! mcp==2.3.0`); `.ci/run` installs it and runs them with `-- --ignored`.

use crate::common::*;
use crate::mcp::{McpHttp, TOOLS};
use serde_json::{Value, json};

pub fn require_sdk() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "import mcp, mcp_types"])
        .output();
    assert!(
        sdk.is_ok_and(|o| o.status.success()),
        "the Python MCP SDK is missing: pip install mcp==2.3.0"
    );
}

/// Runs tests/peers/mcp/mcp_client.py against `target` and checks what the SDK saw.
fn drive(scripts: &Scripts, target: &str, mode: &str, token: Option<&str>) {
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo().join("tests/peers/mcp/mcp_client.py"))
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

const PY_AGENT: &str = r#"
agent("calc").provider("anthropic").model("mock-model")
    .tools(["py__add", "py__fail"]).capabilities(["mcp:py"]);
"#;

/// An agent run against `kiln mock` whose model calls the Python server's tools mounted as
/// `py__*`: the result, kiln's own validation and the server's `isError` all reach the model.
fn agent_uses_python_server(mount: &str) {
    let agent = Scripts::new(&[("agent.rhai", PY_AGENT)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [
            {"name": "py__add", "args": {"a": 2, "b": 40}},
            {"name": "py__add", "args": {"a": "two", "b": 40}},
            {"name": "py__fail", "args": {}}
        ]},
        {"text": "Done."}
    ]}));
    let calls = crate::mcp::mcp_mount::ask_calc(agent.path(), &mock, &["--mcp", mount]);
    assert_eq!(
        calls[0]["outcome"]["result"],
        json!({"result": 42}),
        "{}",
        calls[0]
    );
    let invalid = calls[1]["outcome"].to_string();
    assert!(
        invalid.contains("/a: \\\"two\\\" is not of type"),
        "{invalid}"
    );
    let refused = calls[2]["outcome"].to_string();
    assert!(refused.contains("the python server refuses"), "{refused}");
    let second = mock.requests()[1]["body"].to_string();
    assert!(second.contains("the python server refuses"), "{second}");
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_server_over_stdio_mounted_in_an_agent() {
    require_sdk();
    let server = repo().join("tests/peers/mcp/mcp_server.py");
    agent_uses_python_server(&format!("py=python3 {}", server.display()));
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_server_over_http_mounted_in_an_agent() {
    require_sdk();
    let server = PythonHttpServer::start();
    let addr = &server.addr;
    agent_uses_python_server(&format!("py=http://{addr}/mcp"));
}

/// tests/peers/mcp/mcp_server.py over streamable HTTP on a free loopback port, stopped on drop.
struct PythonHttpServer {
    child: std::process::Child,
    addr: String,
}

impl PythonHttpServer {
    fn start() -> PythonHttpServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("python3")
            .arg(repo().join("tests/peers/mcp/mcp_server.py"))
            .args(["http", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start the Python server");
        // Ready once it accepts connections (generous: the SDK imports take a while).
        let addr = format!("127.0.0.1:{port}");
        let up = (0..300).any(|_| {
            std::net::TcpStream::connect(&addr).is_ok() || {
                std::thread::sleep(std::time::Duration::from_millis(50));
                false
            }
        });
        let server = PythonHttpServer { child, addr };
        assert!(up, "the Python server never listened on {}", server.addr);
        server
    }
}

impl Drop for PythonHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tool whose capability `kiln mcp` grants with `--ask`: it writes to the store.
pub const ASKED: &str = r#"
tool("remember")
    .description("Keeps a note")
    .param("text", "string")
    .requires(["store:notes"])
    .handler(|args| { store_set("notes", "last", args.text); "kept " + args.text });
"#;

/// Calls `remember` through tests/peers/mcp/mcp_ask.py; what the SDK saw.
fn ask_through_client(target: &str, dir: &std::path::Path, mode: &str, answer: &str) -> Value {
    call_through_client(target, dir, mode, answer, &[])
}

/// tests/peers/mcp/mcp_ask.py answering `answer`, with `call` (tool, JSON args) if given.
pub fn call_through_client(
    target: &str,
    dir: &std::path::Path,
    mode: &str,
    answer: &str,
    call: &[&str],
) -> Value {
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/mcp/mcp_ask.py"))
        .args([target, mode, answer])
        .args(call)
        .current_dir(dir)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the SDK failed against kiln mcp ({mode}, {answer}):\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
    assert_eq!(v["protocol"], mode, "{v}");
    v
}

/// `--ask` grants are asked through the client: a yes runs the tool, a no refuses it, and a
/// client that cannot ask is told how to grant the capability instead.
fn ask_grants_through(target: &str, dir: &std::path::Path, mode: &str) {
    let v = ask_through_client(target, dir, mode, "accept");
    assert_eq!(v["is_error"], false, "{v}");
    assert_eq!(v["text"], "kept kept", "{v}");
    let asked = v["asked"][0].as_str().unwrap_or_default();
    assert!(
        asked.contains("allow tool \"remember\" to use [store:notes]"),
        "{v}"
    );

    let v = ask_through_client(target, dir, mode, "decline");
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(
        v["text"], "tool \"remember\" was refused: the use of [store:notes] was not approved",
        "{v}"
    );

    let v = ask_through_client(target, dir, mode, "none");
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(v["asked"], json!([]), "{v}");
    let text = v["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("cannot ask (it does not support elicitation)")
            && text.contains("the server's operator may grant it without asking")
            && !text.contains("--yes"),
        "{text}"
    );
}

pub fn ask_args() -> Vec<&'static str> {
    vec!["--scripts", ".", "--caps", "store:notes", "--ask", "store"]
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_ask_grants_are_asked_through_the_client_over_stdio() {
    require_sdk();
    let scripts = Scripts::new(&[("tools.rhai", ASKED)]);
    let mut argv = vec![
        kiln_bin().display().to_string(),
        "mcp".into(),
        "--no-stdlib".into(),
    ];
    argv.extend(ask_args().into_iter().map(String::from));
    let target = json!(argv).to_string();
    for mode in ["2025-11-25", "2026-07-28"] {
        ask_grants_through(&target, scripts.path(), mode);
    }
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_ask_grants_are_asked_through_the_client_over_http() {
    require_sdk();
    let scripts = Scripts::new(&[("tools.rhai", ASKED)]);
    let server = McpHttp::start(scripts.path(), &ask_args(), &[]);
    for mode in ["2025-11-25", "2026-07-28"] {
        ask_grants_through(&server.url, scripts.path(), mode);
    }
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_ask_grants_run_without_asking_under_yes() {
    require_sdk();
    let scripts = Scripts::new(&[("tools.rhai", ASKED)]);
    let mut args = ask_args();
    args.push("--yes");
    let server = McpHttp::start(scripts.path(), &args, &[]);
    let v = ask_through_client(&server.url, scripts.path(), "2025-11-25", "none");
    assert_eq!(v["is_error"], false, "{v}");
    assert_eq!(v["asked"], json!([]), "{v}");
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_kiln_serve_slash_mcp_tells_clients_of_reloads() {
    require_sdk();
    for mode in ["2025-11-25", "2026-07-28"] {
        let scripts = Scripts::new(&[("tools.rhai", TOOLS)]);
        let db = scripts.path().join("serve.db");
        let serve = crate::doors::serve::Serve::start(scripts.path(), &db, &["--no-stdlib"], &[]);
        // The same session as against `kiln mcp`, ending with a saved script announced.
        drive(&scripts, &format!("{}/mcp", serve.url), mode, None);
    }
}

/// `kiln call SERVER__revision` through a mount; what the server says it was called on.
fn mounted_revision(mount: &str, server: &str) -> String {
    let dir = Scripts::new(&[]);
    let tool = format!("{server}__revision");
    let caps = format!("mcp:{server}");
    let out = kiln(
        &[
            "call",
            &tool,
            "{}",
            "--scripts",
            ".",
            "--caps",
            &caps,
            "--mcp",
            mount,
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    stdout(&out)
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_sdk_sees_titles_output_schemas_and_annotations() {
    require_sdk();
    for mode in ["2025-11-25", "2026-07-28"] {
        let scripts = Scripts::new(&[("tools.rhai", crate::scripts::tool_meta::META_TOOLS)]);
        let target = json!([
            kiln_bin(),
            "mcp",
            "--no-stdlib",
            "--scripts",
            ".",
            "--caps",
            "net,fs.write"
        ]);
        let out = std::process::Command::new("python3")
            .arg(repo().join("tests/peers/mcp/mcp_meta_client.py"))
            .args([&target.to_string(), mode])
            .current_dir(scripts.path())
            .output()
            .expect("python3");
        assert!(out.status.success(), "{mode}: {}", stderr(&out));
        let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
        assert_eq!(v["protocol"], mode);
        assert_eq!(v["sum"]["title"], "Sum of two numbers");
        assert_eq!(
            v["sum"]["output_schema"]["properties"]["sum"]["type"],
            "integer"
        );
        assert_eq!(
            v["sum"]["annotations"],
            json!({"read_only": true, "destructive": false, "idempotent": true, "open_world": false})
        );
        assert_eq!(v["save"]["annotations"]["destructive"], true);
        assert_eq!(v["fetch"]["annotations"]["open_world"], true);
        assert_eq!(
            v["call_sum"],
            json!({"structured": {"sum": 42}, "is_error": false})
        );
        // A bare integer's schema and value are structured only on the revision that allows it.
        if mode == "2026-07-28" {
            assert_eq!(v["count"]["output_schema"], json!({"type": "integer"}));
            assert_eq!(v["call_count"]["structured"], 7);
        } else {
            assert_eq!(v["count"]["output_schema"], Value::Null);
        }
    }
}

/// An agent whose script declares the Python server (`decl`) and lists `py__*`: the model's
/// calls reach it, its `isError` and its structured content reach the model.
fn agent_uses_declared_python_server(decl: &str) {
    let agent = format!(
        "{decl}\nagent(\"calc\").provider(\"anthropic\").model(\"mock-model\")\n    .tools([\"py__*\"]).capabilities([\"mcp:py\"]);\n"
    );
    let dir = Scripts::new(&[("agent.rhai", &agent)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [
            {"name": "py__add", "args": {"a": 2, "b": 40}},
            {"name": "py__fail", "args": {}},
            {"name": "py__stats", "args": {"values": [1, 2, 3]}}
        ]},
        {"text": "Done."}
    ]}));
    let calls = crate::mcp::mcp_mount::ask_calc(dir.path(), &mock, &[]);
    assert_eq!(
        calls[0]["outcome"]["result"],
        json!({"result": 42}),
        "{}",
        calls[0]
    );
    let refused = calls[1]["outcome"].to_string();
    assert!(refused.contains("the python server refuses"), "{refused}");
    assert_eq!(
        calls[2]["outcome"]["result"],
        json!({"sum": 6, "count": 3}),
        "{}",
        calls[2]
    );
    let second = mock.requests()[1]["body"].to_string();
    assert!(
        second.contains("the python server refuses") && second.contains("\\\"count\\\":3"),
        "{second}"
    );
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_mounts_speak_2026_with_servers_that_do_and_2025_with_the_rest() {
    require_sdk();
    let modern = repo().join("tests/peers/mcp/mcp_revision_server.py");
    let said = mounted_revision(&format!("rev=python3 {}", modern.display()), "rev");
    assert!(said.contains("2026-07-28"), "{said}");
    let legacy = repo().join("tests/peers/mcp/mcp_legacy_server.py");
    let said = mounted_revision(&format!("old=python3 {}", legacy.display()), "old");
    assert!(said.contains("2025-11-25"), "{said}");
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_server_declared_in_a_script_over_stdio() {
    require_sdk();
    let server = repo().join("tests/peers/mcp/mcp_server.py");
    agent_uses_declared_python_server(&format!(
        "mcp_server(\"py\").command(\"python3\", [{:?}]);",
        server.display().to_string()
    ));
}

#[test]
#[ignore = "needs the Python MCP SDK: pip install mcp==2.3.0 (run by .ci/run)"]
fn mcp_peers_python_server_declared_in_a_script_over_http() {
    require_sdk();
    let server = PythonHttpServer::start();
    let addr = &server.addr;
    agent_uses_declared_python_server(&format!("mcp_server(\"py\").url(\"http://{addr}/mcp\");"));
}

/// The official time server (PyPI `mcp-server-time`, on the SDK's 2026-07-28 revision) offers
/// no list changes and answers `subscriptions/listen` with -32601: it must still mount.
#[test]
#[ignore = "needs mcp-server-time: pip install mcp-server-time==2026.10.19 (run by .ci/run)"]
fn mcp_peers_the_official_time_server_mounts_and_answers() {
    require_sdk();
    let scripts = Scripts::new(&[]);
    let mount = "time=python3 -m mcp_server_time --local-timezone UTC";
    let out = std::process::Command::new(kiln_bin())
        .args(["call", "time__get_current_time", r#"{"timezone":"UTC"}"#])
        .args(["--caps", "mcp:time", "--scripts", ".", "--mcp", mount])
        .current_dir(scripts.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("kiln");
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(v["result"]["timezone"], "UTC", "{v}");
    assert!(v["result"]["datetime"].is_string(), "{v}");
}

/// `kiln mcp --code-mode` driven by the SDK: two tools listed, and one `run_code` call runs a
/// program that calls a script tool and a mounted server's tool (the official time server).
#[test]
#[ignore = "needs mcp-server-time: pip install mcp-server-time==2026.10.19 (run by .ci/run)"]
fn mcp_peers_code_mode_scripts_a_script_tool_and_a_mounted_server_in_one_call() {
    require_sdk();
    let scripts = Scripts::new(&[(
        "greet.rhai",
        r#"tool("greet").description("Greets").param("name", "string").handler(|a| `Hello, ${a.name}!`);"#,
    )]);
    let argv = json!([
        kiln_bin(),
        "mcp",
        "--code-mode",
        "--no-stdlib",
        "--scripts",
        ".",
        "--caps",
        "mcp:time",
        "--mcp",
        "time=python3 -m mcp_server_time --local-timezone UTC"
    ]);
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/mcp/mcp_code_mode.py"))
        .arg(argv.to_string())
        .current_dir(scripts.path())
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the client");
    assert_eq!(v["tools"], json!(["run_code", "search_tools"]));
    assert_eq!(v["run_code"]["is_error"], false, "{v}");
    let said = v["run_code"]["text"].as_str().unwrap_or("");
    assert!(said.starts_with("Hello, Ada! It is 20"), "{said}");
    assert!(said.ends_with(" in UTC."), "{said}");
    assert_eq!(
        v["search"][0]["function"], "time__get_current_time(#{ timezone: string })",
        "{v}"
    );
}
