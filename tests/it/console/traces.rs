//! Traces: kiln's OpenTelemetry GenAI spans read back from a real receiver, Arize Phoenix
//! (`#[ignore]`d without it: KILN_PHOENIX names the `phoenix` command; `.ci/run` installs
//! arize-phoenix pinned into a virtual environment), and a run whose collector is down.

use crate::common::*;
use crate::doors::serve::{Serve, shop_scenario, shop_scripts};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `phoenix serve` on 127.0.0.1; killed on drop.
struct Phoenix {
    url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Phoenix {
    fn start() -> Phoenix {
        let bin = std::env::var("KILN_PHOENIX").expect("KILN_PHOENIX names the phoenix command");
        let dir = tempfile::tempdir().expect("a working folder");
        let port = free_port();
        let child = Command::new(bin)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start phoenix");
        let phoenix = Phoenix {
            url: format!("http://127.0.0.1:{port}"),
            child,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        while Instant::now() < deadline {
            let up = std::panic::catch_unwind(|| http_get(&format!("{}/healthz", phoenix.url)));
            if up.is_ok_and(|b| b.contains("OK")) {
                return phoenix;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        panic!("phoenix did not start within 300 s");
    }

    /// Every span of `project`, once at least `n` are there (waiting up to 30 s: export is
    /// batched).
    fn spans(&self, project: &str, n: usize) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (status, body) = get(&format!(
                "{}/v1/projects/{project}/spans?limit=1000",
                self.url
            ));
            let spans = body["data"].as_array().cloned().unwrap_or_default();
            if status == 200 && spans.len() >= n {
                return spans;
            }
            assert!(
                Instant::now() < deadline,
                "{project}: {} spans of {n} after 30 s ({status}): {body}",
                spans.len()
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one {name} span in {spans:#?}");
    found[0]
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// An integer attribute (the REST API may give numbers as text).
fn int(span: &Value, key: &str) -> i64 {
    let v = attr(span, key);
    v.as_i64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("{key} is not an integer in {span:#}"))
}

fn id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap_or_default()
}

fn trace(span: &Value) -> &str {
    span["context"]["trace_id"].as_str().unwrap_or_default()
}

/// `kiln` with the traces of `project` going to `phoenix`.
fn traced(phoenix: &Phoenix, project: &str, args: &[&str], cwd: &std::path::Path) -> String {
    let out = Command::new(kiln_bin())
        .args(args)
        .args(["--otlp", &phoenix.url])
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            format!("openinference.project.name={project}"),
        )
        .env("OPENAI_API_KEY", "test-key")
        .env_remove("KILN_LOG")
        .output()
        .expect("run kiln");
    assert!(out.status.success(), "kiln {args:?}:\n{}", stderr(&out));
    stdout(&out)
}

/// The trace id `kiln logs` shows for the newest run.
fn logged_trace(cwd: &std::path::Path) -> String {
    let out = kiln(&["logs", "-n", "1"], cwd);
    let text = stdout(&out);
    let id = text
        .split(", trace ")
        .nth(1)
        .map(|rest| {
            rest.split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .unwrap_or_else(|| panic!("kiln logs shows no trace id:\n{text}"));
    assert_eq!(id.len(), 32, "{text}");
    id
}

#[test]
#[ignore = "needs Arize Phoenix (KILN_PHOENIX); .ci/run installs arize-phoenix==20.26.1"]
fn phoenix_shows_the_demo_a_pipeline_and_a_served_run_as_kiln_logged_them() {
    let phoenix = Phoenix::start();
    let work = tempfile::tempdir().expect("a workspace");
    let demo = repo().join("examples/demo");
    let demo = demo.to_string_lossy();

    // The demo agent: one run, four model requests, three tools, all one trace.
    let answer = traced(
        &phoenix,
        "demo",
        &[
            "ask",
            "demo",
            "What is 17% of 240, in upper case words?",
            "--scripts",
            &demo,
        ],
        work.path(),
    );
    assert!(answer.contains("FORTY POINT EIGHT"), "{answer}");
    let spans = phoenix.spans("demo", 8);
    let run = one(&spans, "invoke_agent demo");
    assert_eq!(
        trace(run),
        logged_trace(work.path()),
        "kiln logs names the run's trace"
    );
    assert_eq!(attr(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(attr(run, "gen_ai.agent.name"), "demo");
    assert_eq!(attr(run, "gen_ai.provider.name"), "kiln.script");
    assert!(
        run["parent_id"].is_null(),
        "the run is the trace's root: {run:#}"
    );
    let chats = named(&spans, "chat script");
    assert_eq!(chats.len(), 4, "{spans:#?}");
    let mut tools: Vec<&str> = spans
        .iter()
        .filter(|s| attr(s, "gen_ai.operation.name") == "execute_tool")
        .map(|s| attr(s, "gen_ai.tool.name").as_str().unwrap_or_default())
        .collect();
    tools.sort();
    assert_eq!(tools, ["calculator", "spell_number", "string_manipulation"]);
    for s in spans.iter().filter(|s| s["name"] != "invoke_agent demo") {
        assert_eq!(s["parent_id"], id(run), "a child of the run: {s:#}");
        assert_eq!(trace(s), trace(run));
    }
    let calc = one(&spans, "execute_tool calculator");
    assert_eq!(attr(calc, "gen_ai.tool.type"), "function");
    assert!(attr(calc, "gen_ai.tool.call.id").is_string(), "{calc:#}");
    assert!(
        attr(calc, "gen_ai.tool.call.arguments").is_null(),
        "arguments only when opted in"
    );
    let last = chats
        .iter()
        .find(|c| int(c, "kiln.round") == 4)
        .expect("round 4");
    assert_eq!(
        attr(last, "gen_ai.response.finish_reasons"),
        &json!(["stop"])
    );

    // Token counts against the run log: an OpenAI-wire agent against kiln mock.
    let mock = Mock::start(&shop_scenario());
    let shop = shop_scripts(&mock);
    let shop_dir = shop.path().to_string_lossy().to_string();
    traced(
        &phoenix,
        "shop",
        &[
            "ask",
            "shop",
            "Price of SKU-1?",
            "--no-stream",
            "--scripts",
            &shop_dir,
        ],
        work.path(),
    );
    let logged: Value =
        serde_json::from_str(&stdout(&kiln(&["logs", "-n", "1", "--json"], work.path())))
            .expect("kiln logs --json");
    let logged = &logged[0];
    let spans = phoenix.spans("shop", 4);
    let run = one(&spans, "invoke_agent shop");
    assert_eq!(trace(run), logged["trace_id"], "{logged:#}");
    assert_eq!(
        int(run, "gen_ai.usage.input_tokens"),
        logged["input_tokens"].as_i64().unwrap_or(-1)
    );
    assert_eq!(
        int(run, "gen_ai.usage.output_tokens"),
        logged["output_tokens"].as_i64().unwrap_or(-1)
    );
    assert_eq!(
        (
            int(run, "gen_ai.usage.input_tokens"),
            int(run, "gen_ai.usage.output_tokens")
        ),
        (50, 11)
    );
    let chats = named(&spans, "chat mock-model");
    let mut per_round: Vec<(i64, i64, i64)> = chats
        .iter()
        .map(|c| {
            (
                int(c, "kiln.round"),
                int(c, "gen_ai.usage.input_tokens"),
                int(c, "gen_ai.usage.output_tokens"),
            )
        })
        .collect();
    per_round.sort();
    assert_eq!(per_round, [(1, 20, 5), (2, 30, 6)]);
    assert!(
        chats
            .iter()
            .all(|c| attr(c, "gen_ai.provider.name") == "openai" && c["span_kind"] == "LLM")
    );
    let lookup = one(&spans, "execute_tool lookup");
    assert_eq!(lookup["parent_id"], id(run));

    // A pipeline: invoke_workflow, a span per node, and each node's call under its node.
    let catalog = repo()
        .join("examples/catalog")
        .to_string_lossy()
        .to_string();
    let pipelines = repo()
        .join("examples/pipelines")
        .to_string_lossy()
        .to_string();
    traced(
        &phoenix,
        "pipeline",
        &[
            "run",
            "price_report",
            "-i",
            "sku=SKU-1",
            "--caps",
            "database_read",
            "--scripts",
            &catalog,
            "--scripts",
            &pipelines,
        ],
        work.path(),
    );
    let spans = phoenix.spans("pipeline", 8);
    let flow = one(&spans, "invoke_workflow price_report");
    assert_eq!(attr(flow, "gen_ai.workflow.name"), "price_report");
    for node in ["product", "discount", "report"] {
        let n = one(&spans, &format!("node {node}"));
        assert_eq!(n["parent_id"], id(flow), "{n:#}");
    }
    let lookup = one(&spans, "execute_tool database_lookup");
    assert_eq!(lookup["parent_id"], id(one(&spans, "node product")));
    let writer = one(&spans, "invoke_agent writer");
    assert_eq!(writer["parent_id"], id(one(&spans, "node report")));
    assert!(spans.iter().all(|s| trace(s) == trace(flow)), "one trace");

    // kiln serve continues the trace the official OpenAI SDK's caller started, and answers
    // with a traceparent of its own span in that trace.
    let mock = Mock::start(&shop_scenario());
    let shop = shop_scripts(&mock);
    let db = shop.path().join("kiln.db");
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url.as_str()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "openinference.project.name=serve",
        ),
    ];
    let serve = Serve::start(shop.path(), &db, &[], &otel);
    let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let out = Command::new("python3")
        .arg(repo().join("tests/peers/trace_sdk.py"))
        .args([&serve.url, caller])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the SDK script failed:\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(v["text"], "SKU-1 costs 4.50.");
    let answered = v["traceparent"].as_str().unwrap_or_default();
    assert!(
        answered.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "{v}"
    );
    let spans = phoenix.spans("serve", 5);
    let request = one(&spans, "POST /v1/chat/completions");
    assert_eq!(trace(request), "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(
        request["parent_id"], "b7ad6b7169203331",
        "the caller's span is the parent"
    );
    assert!(
        answered.contains(id(request)),
        "{answered} names the server span"
    );
    let run = one(&spans, "invoke_agent shop");
    assert_eq!(run["parent_id"], id(request));
    assert_eq!(trace(run), trace(request));
    drop(serve);

    // One trace from the caller through kiln serve, the agent and its tool to a mounted MCP
    // server (another kiln, `kiln mcp` over stdio, exporting its own spans) and its tool.
    let inner = Scripts::new(&[(
        "stock.rhai",
        r#"tool("stock").description("Units in stock").param("sku", "string").handler(|a| 120);"#,
    )]);
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "inv__stock", "args": {"sku": "SKU-1"}}], "usage": {"input_tokens": 10, "output_tokens": 3}},
        {"text": "120 in stock.", "usage": {"input_tokens": 12, "output_tokens": 4}}
    ]}));
    let outer = Scripts::new(&[(
        "stock.rhai",
        &format!(
            r#"agent("stock").provider("openai").model("mock-model").base_url("{}/v1").tools(["inv__stock"]).capabilities(["mcp:inv"]);"#,
            mock.url
        ),
    )]);
    let mount = format!(
        "inv={} mcp --no-stdlib --scripts {}",
        kiln_bin().display(),
        inner.path().display()
    );
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix.url.as_str()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "openinference.project.name=mounted",
        ),
    ];
    let db = outer.path().join("kiln.db");
    let serve = Serve::start(outer.path(), &db, &["--mcp", &mount], &otel);
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let (_, text) = chat_in_trace(&serve, "stock", "Stock of SKU-1?", caller);
    assert!(text.contains("120 in stock."), "{text}");
    let spans = phoenix.spans("mounted", 7);
    let proxy = one(&spans, "execute_tool inv__stock");
    assert_eq!(attr(proxy, "gen_ai.tool.type"), "extension");
    let served = one(&spans, "tools/call stock");
    assert_eq!(
        served["parent_id"],
        id(proxy),
        "the mounted server continues the call's trace"
    );
    let inner_call = one(&spans, "execute_tool stock");
    assert_eq!(inner_call["parent_id"], id(served));
    let run = one(&spans, "invoke_agent stock");
    assert_eq!(proxy["parent_id"], id(run));
    assert_eq!(
        one(&spans, "POST /v1/chat/completions")["parent_id"],
        "00f067aa0ba902b7"
    );
    assert!(
        spans
            .iter()
            .all(|s| trace(s) == "4bf92f3577b34da6a3ce929d0e0e4736"),
        "client, kiln, agent, tool and mounted server in one trace: {spans:#?}"
    );
    drop(serve);

    screenshot(&phoenix, "demo");
}

/// A picture of the demo's trace in Phoenix's UI, by headless Chromium (KILN_CHROMIUM, or
/// /usr/bin/chromium). KILN_SCREENSHOT_OUT copies it there (docs/images/phoenix-trace.png).
fn screenshot(phoenix: &Phoenix, project: &str) {
    let chromium = std::env::var("KILN_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let (_, projects) = get(&format!("{}/v1/projects", phoenix.url));
    let project_id = projects["data"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == project))
        .and_then(|p| p["id"].as_str())
        .expect("the demo's project")
        .to_string();
    let spans = phoenix.spans(project, 8);
    let trace_id = trace(one(&spans, "invoke_agent demo")).to_string();
    let dir = tempfile::tempdir().expect("a folder");
    let png = dir.path().join("trace.png");
    let url = format!("{}/projects/{project_id}/traces/{trace_id}", phoenix.url);
    let out = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--window-size=1440,900",
            "--virtual-time-budget=15000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", png.display()))
        .arg(&url)
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium: {}", stderr(&out));
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!(
        bytes.len() > 20_000,
        "a page with something on it: {} bytes",
        bytes.len()
    );
    if let Ok(to) = std::env::var("KILN_SCREENSHOT_OUT") {
        std::fs::copy(&png, to).expect("copy the screenshot");
    }
}

#[test]
fn a_run_whose_collector_is_down_succeeds_with_a_warning() {
    let closed = free_port();
    let work = tempfile::tempdir().expect("a workspace");
    let demo = repo().join("examples/demo");
    let began = Instant::now();
    let out = Command::new(kiln_bin())
        .args([
            "ask",
            "demo",
            "What is 17% of 240, in upper case words?",
            "--scripts",
        ])
        .arg(&demo)
        .args(["--otlp", &format!("http://127.0.0.1:{closed}")])
        .current_dir(work.path())
        .env("NO_COLOR", "1")
        .env_remove("KILN_LOG")
        .output()
        .expect("run kiln");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("FORTY POINT EIGHT"));
    assert!(
        stderr(&out).contains("traces not exported"),
        "{}",
        stderr(&out)
    );
    // Export is off the run's path: the run is not held up by it, and the last flush gives
    // up quickly on a refused connection.
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    let logged = stdout(&kiln(&["logs", "-n", "1"], work.path()));
    assert!(
        logged.contains(", trace "),
        "the run log keeps the trace id: {logged}"
    );
}

/// A chat completion to `kiln serve`'s agent `model` inside the caller's trace `traceparent`:
/// the response's headers and body.
fn chat_in_trace(
    serve: &Serve,
    model: &str,
    prompt: &str,
    traceparent: &str,
) -> (Vec<(String, String)>, String) {
    let body = json!({"model": model, "messages": [{"role": "user", "content": prompt}]});
    post_in_trace(serve, "/v1/chat/completions", &body, traceparent)
}

/// POSTs `body` to `path` of `kiln serve` inside the caller's trace: the response's headers
/// and body.
fn post_in_trace(
    serve: &Serve,
    path: &str,
    body: &Value,
    traceparent: &str,
) -> (Vec<(String, String)>, String) {
    let (status, headers, text) = http_raw(
        "POST",
        &format!("{}{path}", serve.url),
        &[
            ("content-type", "application/json"),
            ("traceparent", traceparent),
        ],
        &body.to_string(),
    );
    assert_eq!(status, 200, "{text}");
    (headers, text)
}

#[test]
fn kiln_serve_continues_a_callers_traceparent_and_answers_with_its_own() {
    let mock = Mock::start(&shop_scenario());
    let shop = shop_scripts(&mock);
    let db = shop.path().join("kiln.db");
    let closed = format!("http://127.0.0.1:{}", free_port());
    let serve = Serve::start(shop.path(), &db, &["--otlp", &closed], &[]);
    let caller = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let (headers, _) = chat_in_trace(&serve, "shop", "Price of SKU-1?", caller);
    let answered = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("traceparent"))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no traceparent in {headers:?}"));
    assert!(
        answered.starts_with("00-0af7651916cd43dd8448eb211c80319c-"),
        "{answered}"
    );
    assert!(
        !answered.contains("b7ad6b7169203331"),
        "kiln's own span, not the caller's"
    );
    let logged = stdout(&kiln(
        &["logs", "-n", "1", "--db", &db.to_string_lossy()],
        shop.path(),
    ));
    assert!(
        logged.contains("trace 0af7651916cd43dd8448eb211c80319c"),
        "{logged}"
    );
}

/// The Responses door continues the caller's trace too, and the run log keeps its id.
#[test]
fn a_response_continues_a_callers_traceparent() {
    let mock = Mock::start(&shop_scenario());
    let shop = shop_scripts(&mock);
    let db = shop.path().join("kiln.db");
    let closed = format!("http://127.0.0.1:{}", free_port());
    let serve = Serve::start(shop.path(), &db, &["--otlp", &closed], &[]);
    let caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let body = json!({"model": "shop", "input": "Price of SKU-1?"});
    let (headers, _) = post_in_trace(&serve, "/v1/responses", &body, caller);
    let answered = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("traceparent"))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no traceparent in {headers:?}"));
    assert!(
        answered.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
        "{answered}"
    );
    let logged = stdout(&kiln(
        &["logs", "-n", "1", "--db", &db.to_string_lossy()],
        shop.path(),
    ));
    assert!(
        logged.contains("trace 4bf92f3577b34da6a3ce929d0e0e4736"),
        "{logged}"
    );
}
