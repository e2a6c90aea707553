//! `kiln serve`: the real binary on 127.0.0.1, its agents talking to `kiln mock`, driven by
//! the official OpenAI Python SDK (when installed; `.ci/run` requires it) and by raw HTTP.

use crate::common::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `kiln serve`; killed on drop.
pub struct Serve {
    pub url: String,
    pub child: Child,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Serve {
    /// Starts `kiln serve --bind 127.0.0.1:0 --scripts DIR --db DB ARGS`.
    pub fn start(scripts: &Path, db: &Path, args: &[&str], env: &[(&str, &str)]) -> Serve {
        Self::start_command(Command::new(kiln_bin()), scripts, db, args, env)
    }

    /// [`Serve::start`] under `ulimit -v` of `bytes` of address space.
    pub fn start_limited(scripts: &Path, db: &Path, args: &[&str], bytes: u64) -> Serve {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -v {} && exec \"$0\" \"$@\"", bytes / 1024))
            .arg(kiln_bin());
        Self::start_command(cmd, scripts, db, args, &[])
    }

    fn start_command(
        mut cmd: Command,
        scripts: &Path,
        db: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Serve {
        cmd.args(["serve", "--bind", "127.0.0.1:0", "--scripts"])
            .arg(scripts)
            .arg("--db")
            .arg(db)
            .args(args)
            .current_dir(scripts)
            .env("NO_COLOR", "1")
            .env("OPENAI_API_KEY", TEST_KEY)
            .env_remove("KILN_TOKENS")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("KILN_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start kiln serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("serve prints its address");
        let mut err = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let url = line.trim().rsplit(' ').next().unwrap_or("").to_string();
        assert!(url.starts_with("http://127.0.0.1:"), "serve said: {line}");
        Serve {
            url,
            child,
            stderr: Some(stderr),
        }
    }

    /// Waits for the process to exit (up to `secs`) and returns its stderr.
    pub fn wait_exit(&mut self, secs: u64) -> (std::process::ExitStatus, String) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let err = self.stderr.take().map(|h| h.join().unwrap_or_default());
                return (status, err.unwrap_or_default());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "kiln serve did not exit"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scripts folder with a `lookup` tool and agent `shop` talking to `mock`.
pub fn shop_scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "shop.rhai",
        &format!(
            r#"tool("lookup").description("Price of a SKU").param("sku", "string").handler(|a| #{{ sku: a.sku, price: 4.5 }});
agent("shop").provider("openai").model("mock-model").base_url("{}/v1").system("You sell bricks.").tools(["lookup"]);"#,
            mock.url
        ),
    )])
}

/// The second request `shop` sent carried the first exchange of the session ("My name is
/// Ada." answered "Noted."), then the second question.
pub fn second_request_carried_the_first(mock: &Mock) {
    let second = &mock.requests()[1]["body"]["messages"];
    let contents: Vec<&str> = (second.as_array().expect("messages").iter())
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        contents,
        [
            "You sell bricks.",
            "My name is Ada.",
            "Noted.",
            "What is my name?"
        ]
    );
}

/// One lookup round, then the answer; each conversation gets the whole scenario.
pub fn shop_scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}], "usage": {"input_tokens": 20, "output_tokens": 5}},
        {"text": "SKU-1 costs 4.50.", "usage": {"input_tokens": 30, "output_tokens": 6}}
    ]})
}

/// For the `#[ignore]`d SDK tests: run, they fail when the SDK is missing.
fn require_openai_sdk() {
    let ok = Command::new("python3")
        .args(["-c", "import openai"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the OpenAI Python SDK is missing: pip install openai==3.57.0"
    );
}

const TOKEN: &str = "kiln-test-token-0123456789";

#[test]
#[ignore = "needs the OpenAI Python SDK: pip install openai==3.57.0 (run by .ci/run)"]
fn the_openai_sdk_drives_kiln_serve() {
    require_openai_sdk();
    let mock = Mock::start(&shop_scenario());
    let slow = Mock::start(&json!({"loop": true, "turns": [{"text": "done", "delay_ms": 1500}]}));
    let scripts = shop_scripts(&mock);
    std::fs::write(
        scripts.path().join("slow.rhai"),
        format!(
            r#"agent("slow").provider("openai").model("m").base_url("{}/v1");"#,
            slow.url
        ),
    )
    .expect("write slow.rhai");
    let db = scripts.path().join("kiln.db");
    let tokens = json!([{"token": TOKEN, "actor": "sdk-client", "caps": []}]).to_string();
    let serve = Serve::start(
        scripts.path(),
        &db,
        &["--max-runs", "1", "--queue", "0", "--retry-after", "2"],
        &[("KILN_TOKENS", &tokens)],
    );
    let out = Command::new("python3")
        .arg(repo().join("tests/peers/serve_sdk.py"))
        .args([&serve.url, TOKEN])
        .output()
        .expect("python3");
    assert!(out.status.success(), "SDK script failed:\n{}", stderr(&out));
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(v["models"], json!(["shop", "slow"]));
    assert_eq!(v["text"], "SKU-1 costs 4.50.");
    assert_eq!(v["finish"], "stop");
    // Usage is summed over the run's two model requests.
    assert_eq!(v["usage"], json!([50, 11, 61]));
    assert_eq!(v["tool_calls"], json!(["lookup"]));
    assert_eq!(v["stream_text"], "SKU-1 costs 4.50.");
    assert_eq!(v["stream_finish"], "stop");
    assert_eq!(v["stream_usage"], 61);
    assert_eq!(v["unknown_agent"], json!(["NotFoundError", 404, null]));
    assert_eq!(v["bad_token"], json!(["AuthenticationError", 401, null]));
    assert_eq!(v["busy"], json!(["RateLimitError", 429, "2"]));
    // The client's system message follows the agent's own; `user` stays out of ctx.actor_id
    // because the token names the actor.
    let first = &mock.requests()[0]["body"]["messages"];
    assert_eq!(first[0]["content"], "You sell bricks.\n\nAnswer briefly.");
    // Each SDK run is in the run log as `kiln ask` writes it, with the token's actor.
    let logs = kiln(
        &["logs", "--json", "--db", &db.display().to_string()],
        scripts.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{runs:?}");
    let shop: Vec<&Value> = runs.iter().filter(|r| r["agent"] == "shop").collect();
    assert_eq!(shop.len(), 2);
    for r in shop {
        assert_eq!(r["answer"], "SKU-1 costs 4.50.");
        assert_eq!(r["tool_calls"][0]["name"], "lookup");
        assert_eq!(r["actor"], "sdk-client", "{r:#}");
        assert_eq!(r["tool_calls"][0]["outcome"]["result"]["price"], 4.5);
    }
}

/// Reads a run's events with the Python SSE client.
fn sse_events(url: &str) -> Vec<(String, Value)> {
    let out = Command::new("python3")
        .arg(repo().join("tests/peers/sse_events.py"))
        .arg(url)
        .output()
        .expect("python3");
    assert!(out.status.success(), "SSE client failed:\n{}", stderr(&out));
    let v: Vec<(String, Value)> =
        serde_json::from_str(stdout(&out).trim()).expect("json from the SSE client");
    v
}

fn started(serve: &Serve, body: Value) -> String {
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert_eq!(status, 202, "{run}");
    run["id"].as_str().expect("run id").to_string()
}

#[test]
#[ignore = "needs the OpenAI Python SDK: pip install openai==3.57.0 (run by .ci/run)"]
fn run_events_stream_to_an_sse_client_and_the_run_waits() {
    require_openai_sdk();
    let mock = Mock::start(&shop_scenario());
    let scripts = shop_scripts(&mock);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let id = started(
        &serve,
        json!({"agent": "shop", "input": "Price of SKU-1?", "wait": false}),
    );
    // A reader that connects after the run began still gets every event from the start.
    let events = sse_events(&format!("{}/v1/runs/{id}/events", serve.url));
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != "text")
        .collect();
    assert_eq!(
        names,
        [
            "model_request",
            "model_reply",
            "tool_started",
            "tool_finished",
            "model_request",
            "model_reply",
            "end"
        ]
    );
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "text")
        .map(|(_, d)| d["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(text, "SKU-1 costs 4.50.");
    assert_eq!(events[2].1["args"], json!({"sku": "SKU-1"}));
    assert_eq!(events[3].1["outcome"]["result"]["price"], 4.5);
    let (_, end) = events.last().expect("end");
    assert_eq!(end["status"], "completed");
    let (status, run) = get(&format!("{}/v1/runs/{id}?wait=true", serve.url));
    assert_eq!(status, 200);
    assert_eq!(run["report"]["answer"], "SKU-1 costs 4.50.");
    assert_eq!(run["report"]["run_id"], id.as_str());
    // Waiting in the request itself returns the report.
    let (status, run) = post(
        &format!("{}/v1/runs", serve.url),
        &json!({"agent": "shop", "input": "Again?"}),
        &[],
    );
    assert_eq!(
        (status, &run["status"]),
        (200, &json!("completed")),
        "{run}"
    );
    assert_eq!(run["report"]["tool_calls"][0]["name"], "lookup");
    let (status, missing) = get(&format!("{}/v1/runs/run_nope", serve.url));
    assert_eq!(
        (status, &missing["error"]["code"]),
        (404, &json!("run_not_found"))
    );
}

#[test]
fn a_run_cancelled_mid_run_ends_cancelled_with_its_steps_logged() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "too late", "delay_ms": 20000}
    ]}));
    let scripts = shop_scripts(&mock);
    let db = scripts.path().join("k.db");
    let serve = Serve::start(scripts.path(), &db, &[], &[]);
    let id = started(
        &serve,
        json!({"agent": "shop", "input": "Price?", "wait": false}),
    );
    // The second model request is in flight once the mock has seen it.
    mock.wait_for_requests(2);
    let (status, _) = post(
        &format!("{}/v1/runs/{id}/cancel", serve.url),
        &json!({}),
        &[],
    );
    assert_eq!(status, 202);
    let (_, run) = get(&format!("{}/v1/runs/{id}?wait=true", serve.url));
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["error"]["kind"], "cancelled");
    let logs = kiln(
        &["logs", "--json", "--db", &db.display().to_string()],
        scripts.path(),
    );
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    assert_eq!(runs[0]["id"], id.as_str());
    assert_eq!(runs[0]["error"], "cancelled");
    assert_eq!(runs[0]["tool_calls"][0]["name"], "lookup");
}

#[test]
fn a_session_continues_across_requests_and_can_be_deleted() {
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop_scripts(&mock);
    std::fs::write(
        scripts.path().join("clerk.rhai"),
        format!(
            r#"agent("clerk").provider("openai").model("m").base_url("{}/v1");"#,
            mock.url
        ),
    )
    .expect("write");
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let runs = format!("{}/v1/runs", serve.url);
    for input in ["My name is Ada.", "What is my name?"] {
        let (status, run) = post(
            &runs,
            &json!({"agent": "shop", "input": input, "session": "ada"}),
            &[],
        );
        assert_eq!(
            (status, &run["status"]),
            (200, &json!("completed")),
            "{run}"
        );
    }
    // The second request carried the first exchange.
    second_request_carried_the_first(&mock);
    // The session belongs to `shop`: another agent cannot continue it.
    let (status, refused) = post(
        &runs,
        &json!({"agent": "clerk", "input": "hi", "session": "ada"}),
        &[],
    );
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("session \\\"ada\\\" belongs to agent \\\"shop\\\", not \\\"clerk\\\""),
        "{refused}"
    );
    assert_eq!(mock.requests().len(), 2, "the refused run sent nothing");
    let url = format!("{}/v1/sessions/ada", serve.url);
    let (status, session) = get(&url);
    assert_eq!(status, 200);
    assert_eq!(session["agent"], "shop");
    assert_eq!(session["messages"].as_array().map(Vec::len), Some(4));
    let (status, _, _) = http("DELETE", &url, &[], None);
    assert_eq!(status, 204);
    let (status, gone) = get(&url);
    assert_eq!(
        (status, &gone["error"]["code"]),
        (404, &json!("session_not_found"))
    );
}

#[test]
fn a_script_edited_while_serving_is_used_by_the_next_request() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "Done."}
    ]}));
    let scripts = shop_scripts(&mock);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let ask = || {
        let (status, reply) = post(
            &format!("{}/v1/chat/completions", serve.url),
            &json!({"model": "shop", "messages": [{"role": "user", "content": "Price?"}],
                    "kiln": {"include_tool_calls": true}}),
            &[],
        );
        assert_eq!(status, 200, "{reply}");
        reply["kiln"]["tool_calls"][0]["outcome"]["result"]["price"].clone()
    };
    assert_eq!(ask(), 4.5);
    let file = scripts.path().join("shop.rhai");
    let src = std::fs::read_to_string(&file).expect("read");
    std::fs::write(&file, src.replace("price: 4.5", "price: 9.0")).expect("edit");
    // The reload is visible in the metrics; then the next request uses the new handler.
    let metrics = format!("{}/metrics", serve.url);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !http("GET", &metrics, &[], None)
        .2
        .lines()
        .any(|l| l.starts_with("kiln_reloads_total ") && !l.ends_with(" 0"))
    {
        assert!(std::time::Instant::now() < deadline, "no reload seen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(ask(), 9.0);
}

/// The fenced blocks of docs/serve.md's opening (before its first section), by language.
fn doc_blocks(lang: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/serve.md")).expect("docs/serve.md");
    let section = doc.split("\n## ").next().expect("the opening");
    section
        .split("```")
        .skip(1)
        .step_by(2)
        .filter_map(|b| b.strip_prefix(lang))
        .map(str::to_string)
        .collect()
}

/// `kiln serve` over a copy of the starter scripts (its workspace, and its .kiln/, a temp
/// folder): the folder, the server and its port.
fn serve_starter_scripts() -> (tempfile::TempDir, Serve, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).expect("mkdir");
    std::fs::copy(
        repo().join("scripts/hello.rhai"),
        scripts.join("hello.rhai"),
    )
    .expect("copy the starter scripts");
    let serve = Serve::start(&scripts, &dir.path().join("k.db"), &[], &[]);
    let port = serve.url.rsplit(':').next().expect("port").to_string();
    (dir, serve, port)
}

#[test]
fn the_readme_serve_examples_work_as_written() {
    let (_dir, _serve, port) = serve_starter_scripts();
    let sh = doc_blocks("sh").concat();
    assert!(sh.contains("kiln serve --bind 127.0.0.1:8787 &"), "{sh}");
    // The server is already running (on a free port); run the rest as written.
    let curl: String = sh
        .lines()
        .filter(|l| !l.starts_with("kiln serve"))
        .collect::<Vec<_>>()
        .join("\n")
        .replace("8787", &port);
    let out = Command::new("sh").args(["-c", &curl]).output().expect("sh");
    let reply: Value = serde_json::from_slice(&out.stdout).expect("curl printed JSON");
    assert_eq!(reply["choices"][0]["message"]["content"], "Hello, Ada!");
}

#[test]
#[ignore = "needs the OpenAI Python SDK: pip install openai==3.57.0 (run by .ci/run)"]
fn the_readme_python_serve_example_works_as_written() {
    require_openai_sdk();
    let (_dir, _serve, port) = serve_starter_scripts();
    let python = doc_blocks("python").concat().replace("8787", &port);
    let out = Command::new("python3")
        .args(["-c", &python])
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello, Ada!");
}

#[test]
fn chat_fields_reach_the_run_user_context_temperature_and_max_tokens() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "whoami", "args": {}}]},
        {"text": "ok"}
    ]}));
    let scripts = Scripts::new(&[(
        "who.rhai",
        &format!(
            r#"tool("whoami").description("Who asks").handler(|a, ctx| #{{ actor: ctx.actor_id, tenant: ctx.context.tenant }});
agent("who").provider("openai").model("m").base_url("{}/v1").tools(["whoami"]).temperature(0.9).max_tokens(100);"#,
            mock.url
        ),
    )]);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let (status, reply) = post(
        &format!("{}/v1/chat/completions", serve.url),
        &json!({"model": "who", "user": "web-7", "temperature": 0.2, "max_tokens": 55,
                "messages": [{"role": "user", "content": "Who?"}],
                "kiln": {"include_tool_calls": true, "context": {"tenant": "acme"}}}),
        &[],
    );
    assert_eq!(status, 200, "{reply}");
    let result = &reply["kiln"]["tool_calls"][0]["outcome"]["result"];
    assert_eq!(result, &json!({"actor": "web-7", "tenant": "acme"}));
    let sent = &mock.requests()[0]["body"];
    assert_eq!(
        (&sent["temperature"], &sent["max_tokens"]),
        (&json!(0.2), &json!(55)),
        "{sent}"
    );
}

#[test]
fn a_client_that_hangs_up_on_a_stream_cancels_its_run() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "too late", "delay_ms": 20000}
    ]}));
    let scripts = shop_scripts(&mock);
    let serve = Serve::start(scripts.path(), &scripts.path().join("k.db"), &[], &[]);
    let addr = serve.url.trim_start_matches("http://");
    let body =
        json!({"model": "shop", "stream": true, "messages": [{"role": "user", "content": "hi"}]})
            .to_string();
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    // Read until the first chunk names the completion (chatcmpl-RUN_ID), then hang up.
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    let id = loop {
        line.clear();
        assert!(
            reader.read_line(&mut line).expect("read") > 0,
            "stream ended"
        );
        if let Some(data) = line.trim().strip_prefix("data: ") {
            let chunk: Value = serde_json::from_str(data).expect("chunk");
            break chunk["id"]
                .as_str()
                .expect("id")
                .trim_start_matches("chatcmpl-")
                .to_string();
        }
    };
    mock.wait_for_requests(2);
    drop(reader);
    let (_, run) = get(&format!("{}/v1/runs/{id}?wait=true", serve.url));
    assert_eq!(run["status"], "cancelled", "{run}");
}

#[test]
fn kiln_serve_serves_mcp_at_slash_mcp_to_local_clients() {
    let mock = Mock::start(&shop_scenario());
    let scripts = shop_scripts(&mock);
    let db = scripts.path().join("serve.db");
    let serve = Serve::start(scripts.path(), &db, &[], &[]);
    let url = format!("{}/mcp", serve.url);
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "serve-test", "version": "1"}}});
    let accept = ("accept", "application/json, text/event-stream");
    let (status, _, body) = http("POST", &url, &[accept], Some(&init));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"protocolVersion\""), "{body}");
    // The same Origin rule as `kiln mcp --http`: a page from elsewhere is refused.
    let evil = ("origin", "https://evil.example");
    let (status, _, body) = http("POST", &url, &[accept, evil], Some(&init));
    assert_eq!(status, 403, "{body}");
}

#[test]
fn kiln_serve_offers_no_mcp_when_tokens_are_configured() {
    let mock = Mock::start(&shop_scenario());
    let scripts = shop_scripts(&mock);
    let db = scripts.path().join("serve.db");
    let tokens = r#"[{"token": "t-0123456789abcdef", "actor": "ada"}]"#;
    let serve = Serve::start(scripts.path(), &db, &[], &[("KILN_TOKENS", tokens)]);
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "serve-test", "version": "1"}}});
    let (status, _, body) = http(
        "POST",
        &format!("{}/mcp", serve.url),
        &[("authorization", "Bearer t-0123456789abcdef")],
        Some(&init),
    );
    assert_eq!(status, 404, "{body}");
}
