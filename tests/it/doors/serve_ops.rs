//! `kiln serve` in operation: tokens and ceilings, limits (body, deadline, queue), health,
//! metrics, JSON logs and the SIGTERM drain. The helpers are in `serve.rs`.

use crate::common::*;
use crate::common::{get, http, post};
use crate::doors::serve::{Serve, shop_scenario, shop_scripts};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789abc";

#[test]
fn tokens_carry_an_actor_and_a_ceiling_that_requests_cannot_widen() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "whoami", "args": {}}]},
        {"text": "ok"}
    ]}));
    let scripts = Scripts::new(&[(
        "keeper.rhai",
        &format!(
            r#"tool("whoami").description("Who asks").requires("store").handler(|a, ctx| #{{ actor: ctx.actor_id, caps: ctx.capabilities }});
agent("keeper").provider("openai").model("m").base_url("{}/v1").tools(["whoami"]).capabilities(["store", "net"]);"#,
            mock.url
        ),
    )]);
    let tokens = json!([
        {"token": ALICE, "actor": "alice", "caps": ["store", "net:api.example.com"]},
        {"token": BOB, "actor": "bob", "caps": []}
    ]);
    let file = scripts.path().join("tokens.json");
    std::fs::write(&file, tokens.to_string()).expect("tokens file");
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--tokens", &file.display().to_string()],
        &[],
    );
    let runs = format!("{}/v1/runs", serve.url);
    let alice = format!("Bearer {ALICE}");
    let bob = format!("Bearer {BOB}");
    let input = json!({"agent": "keeper", "input": "Who am I?"});

    let (status, e) = post(&runs, &input, &[]);
    assert_eq!(
        (status, &e["error"]["code"]),
        (401, &json!("invalid_api_key"))
    );

    // Alice runs with the agent's grants cut down to her ceiling, as herself.
    let (status, run) = post(&runs, &input, &[("authorization", &alice)]);
    assert_eq!(
        (status, &run["status"]),
        (200, &json!("completed")),
        "{run}"
    );
    let result = &run["report"]["tool_calls"][0]["outcome"]["result"];
    assert_eq!(result["actor"], "alice");
    assert_eq!(result["caps"], json!(["store", "net:api.example.com"]));

    // Bob may not widen his empty ceiling, and without grants the tool is refused.
    let mut widen = input.clone();
    widen["caps"] = json!(["store"]);
    let (status, e) = post(&runs, &widen, &[("authorization", &bob)]);
    assert_eq!(status, 403, "{e}");
    assert_eq!(e["error"]["param"], "caps");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("\"store\""),
        "{e}"
    );
    let (status, run) = post(&runs, &input, &[("authorization", &bob)]);
    assert_eq!((status, &run["status"]), (200, &json!("failed")), "{run}");
    assert_eq!(run["error"]["kind"], "capability");

    // Bob's runs are his alone.
    let bob_run = run["id"].as_str().map(str::to_string);
    let (status, _, _) = http(
        "GET",
        &format!("{}/v1/runs/{}", serve.url, bob_run.unwrap_or_default()),
        &[("authorization", &alice)],
        None,
    );
    assert_eq!(status, 404, "bob's run is not visible to alice");
}

#[test]
fn without_tokens_only_loopback_is_served() {
    let scripts = Scripts::new(&[]);
    let out = Command::new(kiln_bin())
        .args(["serve", "--bind", "0.0.0.0:0", "--scripts"])
        .arg(scripts.path())
        .env_remove("KILN_TOKENS")
        .current_dir(scripts.path())
        .output()
        .expect("kiln serve");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("refusing to serve on 0.0.0.0:0 without tokens"),
        "{}",
        stderr(&out)
    );
    let out = Command::new(kiln_bin())
        .args(["serve", "--scripts"])
        .arg(scripts.path())
        .env("KILN_TOKENS", r#"[{"token": "short", "actor": "a"}]"#)
        .current_dir(scripts.path())
        .output()
        .expect("kiln serve");
    assert!(
        stderr(&out).contains("KILN_TOKENS: [0].token: tokens must be at least 16 characters"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bodies_are_limited_runs_have_deadlines_and_bad_requests_say_where() {
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "late", "delay_ms": 20000}]}));
    let scripts = shop_scripts(&mock);
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--max-body", "300", "--run-timeout", "0.5"],
        &[],
    );
    let chat = format!("{}/v1/chat/completions", serve.url);
    let big = json!({"model": "shop", "messages": [{"role": "user", "content": "x".repeat(400)}]});
    let (status, e) = post(&chat, &big, &[]);
    assert_eq!(status, 413, "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("limit of 300 bytes"),
        "{e}"
    );
    let (status, e) = post(
        &chat,
        &json!({"model": "shop", "messages": [{"role": "user", "content": 5}]}),
        &[],
    );
    assert_eq!(
        (status, &e["error"]["param"]),
        (400, &json!("messages[0].content")),
        "{e}"
    );
    let (status, e) = post(
        &chat,
        &json!({"model": "shop", "messages": [{"role": "tool", "content": "4.5"}]}),
        &[],
    );
    assert_eq!(
        (status, &e["error"]["param"]),
        (400, &json!("messages[0].role")),
        "{e}"
    );
    let (status, _, text) = http("POST", &chat, &[("content-type", "text/plain")], None);
    assert_eq!(status, 415, "{text}");
    let began = std::time::Instant::now();
    let (status, e) = post(
        &chat,
        &json!({"model": "shop", "messages": [{"role": "user", "content": "hi"}]}),
        &[],
    );
    assert_eq!(
        (status, &e["error"]["type"]),
        (504, &json!("timeout")),
        "{e}"
    );
    assert!(began.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn a_full_queue_answers_429_with_retry_after() {
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "slow", "delay_ms": 1500}]}));
    let scripts = shop_scripts(&mock);
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--max-runs", "1", "--queue", "1", "--retry-after", "7"],
        &[],
    );
    let runs = format!("{}/v1/runs", serve.url);
    let body = json!({"agent": "shop", "input": "hi", "wait": false});
    let (first, _) = post(&runs, &body, &[]);
    assert_eq!(first, 202);
    // The second waits in the queue (its request blocks until it has a slot).
    let queued = {
        let (runs, body) = (runs.clone(), body.clone());
        std::thread::spawn(move || post(&runs, &body, &[]).0)
    };
    let ready = format!("{}/readyz", serve.url);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while get(&ready).1["queue_depth"] != 1 {
        assert!(std::time::Instant::now() < deadline, "nothing queued");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let (status, headers, text) = http("POST", &runs, &[], Some(&body));
    assert_eq!(status, 429, "{text}");
    assert!(
        headers.contains(&("retry-after".into(), "7".into())),
        "{headers:?}"
    );
    assert_eq!(queued.join().expect("queued request"), 202);
}

/// Waits (up to 60 s: many runs on a busy machine) until the mock has received `n` requests.
fn wait_for_requests(mock: &Mock, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while mock.requests().len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the mock never received {n} requests"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Starts `n` chat completions on threads; each returns its status and body.
fn chat_requests(url: &str, n: usize) -> Vec<std::thread::JoinHandle<(u16, Value)>> {
    (0..n)
        .map(|i| {
            let url = format!("{url}/v1/chat/completions");
            std::thread::spawn(move || {
                post(
                    &url,
                    &json!({"model": "shop", "messages": [{"role": "user", "content": format!("Price {i}?")}]}),
                    &[],
                )
            })
        })
        .collect()
}

fn logged_runs(db: &Path, cwd: &Path) -> Vec<Value> {
    let logs = kiln(
        &[
            "logs",
            "--json",
            "-n",
            "100",
            "--db",
            &db.display().to_string(),
        ],
        cwd,
    );
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    runs.as_array().cloned().unwrap_or_default()
}

#[test]
fn sigterm_lets_twenty_running_requests_finish_and_every_step_is_logged() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "SKU-1 costs 4.50.", "delay_ms": 1000}
    ]}));
    let scripts = shop_scripts(&mock);
    let db = scripts.path().join("k.db");
    let mut serve = Serve::start(scripts.path(), &db, &["--grace", "20"], &[]);
    let requests = chat_requests(&serve.url, 20);
    // Every run is waiting for its second model reply.
    wait_for_requests(&mock, 40);
    signal(serve.child.id(), "TERM");
    let addr = serve.url.trim_start_matches("http://").to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_ok() {
        assert!(std::time::Instant::now() < deadline, "still accepting");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for r in requests {
        let (status, reply) = r.join().expect("request thread");
        assert_eq!(status, 200, "{reply}");
        assert_eq!(
            reply["choices"][0]["message"]["content"],
            "SKU-1 costs 4.50."
        );
    }
    let (status, err) = serve.wait_exit(20);
    assert!(status.success(), "{err}");
    assert!(err.contains("shutting down"), "{err}");
    let runs = logged_runs(&db, scripts.path());
    assert_eq!(runs.len(), 20);
    for r in &runs {
        assert_eq!(r["answer"], "SKU-1 costs 4.50.", "{r}");
        assert_eq!(r["rounds"], 2);
        assert_eq!(r["tool_calls"][0]["name"], "lookup");
    }
}

#[test]
fn sigterm_past_the_grace_ends_runs_with_a_clear_error_and_keeps_their_steps() {
    let mock = Mock::start(&json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "never", "delay_ms": 30000}
    ]}));
    let scripts = shop_scripts(&mock);
    let db = scripts.path().join("k.db");
    let mut serve = Serve::start(scripts.path(), &db, &["--grace", "0.3"], &[]);
    let requests = chat_requests(&serve.url, 5);
    wait_for_requests(&mock, 10);
    signal(serve.child.id(), "TERM");
    for r in requests {
        let (status, reply) = r.join().expect("request thread");
        assert_eq!(status, 503, "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("grace period ran out"),
            "{reply}"
        );
    }
    let (status, err) = serve.wait_exit(20);
    assert!(status.success(), "{err}");
    let runs = logged_runs(&db, scripts.path());
    assert_eq!(runs.len(), 5);
    for r in &runs {
        assert_eq!(r["error"], "cancelled", "{r}");
        // The completed first step (the tool call) was committed before the cancel.
        assert_eq!(r["tool_calls"][0]["name"], "lookup");
    }
}

#[test]
fn health_metrics_and_json_logs() {
    let mock = Mock::start(&shop_scenario());
    let scripts = shop_scripts(&mock);
    let mut serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--log-format", "json"],
        &[],
    );
    assert_eq!(
        get(&format!("{}/healthz", serve.url)),
        (200, json!({"status": "ok"}))
    );
    let (status, ready) = get(&format!("{}/readyz", serve.url));
    assert_eq!(
        (status, &ready["status"], &ready["agents"]),
        (200, &json!("ready"), &json!(1))
    );
    let (status, _) = post(
        &format!("{}/v1/chat/completions", serve.url),
        &json!({"model": "shop", "messages": [{"role": "user", "content": "Price?"}]}),
        &[],
    );
    assert_eq!(status, 200);
    let (status, headers, text) = http("GET", &format!("{}/metrics", serve.url), &[], None);
    assert_eq!(status, 200);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("text/plain; version=0.0.4")),
        "{headers:?}"
    );
    for line in [
        "kiln_runs_started_total{agent=\"shop\"} 1",
        "kiln_runs_finished_total{agent=\"shop\",outcome=\"ok\"} 1",
        "kiln_tool_calls_total{tool=\"lookup\",outcome=\"ok\"} 1",
        "kiln_tokens_total{direction=\"input\"} 50",
        "kiln_tokens_total{direction=\"output\"} 11",
        "kiln_model_request_duration_seconds_count 2",
        "kiln_queue_depth 0",
        "kiln_runs_active 0",
    ] {
        assert!(text.lines().any(|l| l == line), "missing {line} in\n{text}");
    }
    let (status, e) = get(&format!("{}/v1/nothing", serve.url));
    assert_eq!((status, &e["error"]["code"]), (404, &json!("unknown_url")));
    signal(serve.child.id(), "TERM");
    let (_, err) = serve.wait_exit(20);
    let lines: Vec<Value> = err
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("a JSON log line"))
        .collect();
    let finished = lines
        .iter()
        .find(|l| l["message"] == "run finished")
        .expect("a run-finished line");
    assert_eq!(
        (&finished["agent"], &finished["outcome"]),
        (&json!("shop"), &json!("ok"))
    );
    assert!(
        finished["run_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("run_"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "request" && l["path"] == "/metrics")
    );
}

/// `kiln serve` started under `prlimit --nofile=SOFT:HARD` (prlimit execs it: one pid): its
/// open-file limits once it listens, and its stderr.
fn serve_under_file_limit(soft: u32, hard: u32, extra: &[&str]) -> (String, String) {
    use std::io::{BufRead, Read};
    let scripts = Scripts::new(&[]);
    let mut child = Command::new("prlimit")
        .arg(format!("--nofile={soft}:{hard}"))
        .arg(kiln_bin())
        .args(["serve", "--bind", "127.0.0.1:0", "--no-stdlib", "--scripts"])
        .arg(scripts.path())
        .args(extra)
        .env_remove("KILN_TOKENS")
        .current_dir(scripts.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("prlimit kiln serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the address line");
    assert!(line.contains("listening on"), "{line}");
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", child.id())).expect("limits");
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err);
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .expect("Max open files")
        .to_string();
    (open_files, err)
}

#[test]
fn serve_raises_its_open_file_limit_and_says_when_the_hard_limit_is_too_low() {
    // Raised to the hard limit, which is enough for the defaults: no warning.
    let (limit, err) = serve_under_file_limit(256, 4096, &[]);
    assert_eq!(
        limit.split_whitespace().collect::<Vec<_>>()[3..5],
        ["4096", "4096"],
        "{limit}"
    );
    assert!(!err.contains("open-file limit"), "{err}");
    // A hard limit below what --max-connections and --max-runs may need: said, with the fix.
    let (limit, err) = serve_under_file_limit(256, 300, &["--max-connections", "1000"]);
    assert!(limit.contains("300"), "{limit}");
    assert!(
        err.contains("the open-file limit is 300, below the 1128 that --max-connections and --max-runs may need")
            && err.contains("ulimit -Hn"),
        "{err}"
    );
}
