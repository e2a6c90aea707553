//! The Open Responses compliance suite (openresponses/openresponses, the vendor-neutral
//! specification of OpenAI's Responses API) against `kiln serve`'s `POST /v1/responses`: the
//! agent `responder` of tests/fixtures/openresponses on `kiln mock` serving that folder's
//! scenario.json, every test of the suite passing but the optional ones it skips without
//! their configuration.
//!
//! The suite calls its model concurrently, some requests offering its `get_weather` function
//! tool: the scenario's tool-call turn is `offered` only to those, every other request gets the
//! text turn (`by_round` + `loop`), so one mock serves every test at once. The suite sees only
//! kiln's answers; the test also checks, in the mock's recorded requests, that what the suite
//! sent reached the model (the forced tool choice, the function's output, the earlier turn of
//! `previous_response_id`, the system message, the image and the PDF).
//!
//! `#[ignore]`d: it needs the suite (../shared/peers/openresponses, whose `run` script installs
//! its pinned npm dependencies, Bun among them), which `.ci/run` passes as `KILN_OPENRESPONSES`
//! (without it the test fails saying so). The fixture's scenario is tested without the suite.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The token the suite sends as its API key (its actor owns the responses it makes).
const TOKEN: &str = "kiln-openresponses-token-0123456789";

/// The suite's tests that must run and pass (SOURCES.md's table); any other test it adds must
/// pass too.
const REQUIRED: &[&str] = &[
    "basic-response",
    "streaming-response",
    "system-prompt",
    "tool-calling",
    "function-call-roundtrip",
    "image-input",
    "file-input",
    "multi-turn",
    "previous-response-id",
];

/// The suite's optional tests, skipped unless given a vector store (`file_search`) or told to
/// use web search: kiln hosts neither tool, so they stay skipped.
const OPTIONAL: &[&str] = &["file-search", "offline-web-search"];

/// How long the whole suite may take before it is killed.
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);

fn fixture() -> PathBuf {
    repo().join("tests/fixtures/openresponses")
}

fn scenario() -> Value {
    let path = fixture().join("scenario.json");
    let text = std::fs::read_to_string(&path).expect("the fixture's scenario.json");
    serde_json::from_str(&text).expect("scenario.json is JSON")
}

/// A copy of the fixture's scripts (kiln keeps state next to them).
fn scripts() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in std::fs::read_dir(fixture()).expect("the fixture folder") {
        let path = entry.expect("entry").path();
        std::fs::copy(&path, dir.path().join(path.file_name().expect("name"))).expect("copy");
    }
    dir
}

fn weather_tool() -> Value {
    json!({"type": "function", "name": "get_weather", "description": "Get the current weather",
           "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}})
}

/// The fixture's mock calls `get_weather` only for requests that offer it, on any wire, and
/// answers every other request (whatever its round) with text; the fixture's agent loads and
/// answers through it.
#[test]
fn openresponses_fixture_calls_get_weather_only_when_offered() {
    let mock = Mock::start(&scenario());
    let bearer = format!("Bearer {TEST_KEY}");
    let auth = [("authorization", bearer.as_str())];
    let responses = format!("{}/v1/responses", mock.url);
    let user = json!({"type": "message", "role": "user", "content": "Weather in SF?"});
    let (status, offered) = post(
        &responses,
        &json!({"model": "m", "input": [user], "tools": [weather_tool()]}),
        &auth,
    );
    assert_eq!(status, 200, "{offered}");
    assert_eq!(offered["output"][0]["type"], "function_call", "{offered}");
    assert_eq!(offered["output"][0]["name"], "get_weather");
    let chat = json!({"model": "m", "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]});
    let (status, v) = post(&format!("{}/v1/chat/completions", mock.url), &chat, &auth);
    assert_eq!(status, 200, "{v}");
    let call = &v["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(call["name"], "get_weather", "{v}");
    // Not offered: text, in round 0 and in round 1 (one assistant message in the history).
    let history = json!([user, {"type": "message", "role": "assistant", "content": "Hi"}, user]);
    for input in [json!("Say hello."), history] {
        let (status, v) = post(&responses, &json!({"model": "m", "input": input}), &auth);
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["output"][0]["type"], "message", "{v}");
        assert_eq!(v["output"][0]["content"][0]["text"], "Hello from kiln.");
    }
    let dir = scripts();
    let out = ask_command(
        &["responder", "hi", "--json", "--no-stdlib", "--scripts", "."],
        dir.path(),
    )
    .env("OPENAI_BASE_URL", format!("{}/v1", mock.url))
    .output()
    .expect("kiln ask");
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("report json");
    assert_eq!(report["answer"], "Hello from kiln.", "{report:#}");
}

/// What a finished process printed.
struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `cmd` to its end, killing it after `limit`.
fn run_for(mut cmd: Command, limit: Duration) -> Finished {
    let start = Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the suite");
    let reader = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = reader(Box::new(child.stdout.take().expect("stdout")));
    let err = reader(Box::new(child.stderr.take().expect("stderr")));
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = err.join().unwrap_or_default();
    let stdout = out.join().unwrap_or_default();
    assert!(
        status.is_some(),
        "the suite did not finish in {limit:?}:\n{stdout}\n{stderr}"
    );
    Finished {
        code: status.and_then(|s| s.code()),
        stdout,
        stderr,
        took: start.elapsed(),
    }
}

/// A JSON value shown in a failure, cut to `max` characters.
fn shown(v: &Value, max: usize) -> String {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}... ({} chars)", &text[..at], text.len()),
        None => text,
    }
}

/// The suite's results that are not a pass (nor an optional test skipped): one line each
/// with its errors, then each with its request and response.
fn failures(results: &[Value]) -> (Vec<String>, Vec<String>) {
    let (mut summary, mut details) = (Vec::new(), Vec::new());
    for r in results {
        let id = r["id"].as_str().unwrap_or("?");
        let ok = r["status"] == "passed" || (r["status"] == "skipped" && OPTIONAL.contains(&id));
        if ok {
            continue;
        }
        let errors: Vec<String> = r["errors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| e.as_str().map_or_else(|| e.to_string(), String::from))
            .collect();
        summary.push(format!("{id} ({}): {}", r["status"], errors.join(" | ")));
        details.push(format!(
            "== {id}\nrequest: {}\nresponse: {}",
            shown(&r["request"], 3000),
            shown(&r["response"], 6000),
        ));
    }
    for id in REQUIRED {
        if !results.iter().any(|r| r["id"] == *id) {
            summary.push(format!("{id}: the suite did not run it"));
        }
    }
    (summary, details)
}

/// Whether a model request offers the suite's `get_weather`.
fn offers_weather(body: &Value) -> bool {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["name"] == "get_weather")
}

/// A test of one model request: its body, and that body as JSON text.
type Check = fn(&Value, &str) -> bool;

/// What the suite's requests must bring to the model, which the suite itself cannot see.
const REACHES_THE_MODEL: &[(&str, Check)] = &[
    ("tool-calling: get_weather offered to the model", |b, _| {
        offers_weather(b)
    }),
    (
        "function-call-roundtrip: the forced tool_choice naming get_weather",
        |b, _| offers_weather(b) && b["tool_choice"].to_string().contains("get_weather"),
    ),
    (
        "function-call-roundtrip: the function_call_output sent back to the model",
        |b, _| {
            b["input"].as_array().into_iter().flatten().any(|i| {
                i["type"] == "function_call_output" && i["output"] == "64 degrees and clear"
            })
        },
    ),
    (
        "previous-response-id: the first turn continued by the second",
        |_, t| t.contains("code word: papaya") && t.contains("What code word"),
    ),
    ("system-prompt: the system message", |_, t| {
        t.contains("You are a pirate")
    }),
    ("image-input: the PNG", |_, t| t.contains("iVBORw0KGgo")),
    ("file-input: the PDF", |_, t| t.contains("JVBERi0")),
];

/// The expectations of [`REACHES_THE_MODEL`] no recorded request of the mock meets.
fn unmet(requests: &[Value]) -> Vec<&'static str> {
    let bodies: Vec<(&Value, String)> = requests
        .iter()
        .map(|r| (&r["body"], r["body"].to_string()))
        .collect();
    REACHES_THE_MODEL
        .iter()
        .filter(|(_, check)| !bodies.iter().any(|(b, t)| check(b, t)))
        .map(|(what, _)| *what)
        .collect()
}

/// Runs the suite against `serve_url` with `--json`: how it ended and its report.
fn run_suite(run: &Path, serve_url: &str) -> (Finished, Value) {
    let mut cmd = Command::new(run);
    cmd.arg("--base-url")
        .arg(format!("{serve_url}/v1"))
        .args(["--api-key", TOKEN, "--model", "responder", "--json"])
        .env_remove("OPENRESPONSES_API_KEY");
    let done = run_for(cmd, SUITE_TIMEOUT);
    let parsed: Option<Value> = done
        .stdout
        .find('{')
        .and_then(|at| serde_json::from_str(&done.stdout[at..]).ok());
    let Some(report) = parsed else {
        panic!(
            "the suite printed no results (exit {:?}):\n{}\n{}",
            done.code, done.stdout, done.stderr
        );
    };
    (done, report)
}

/// The harness's reading fails where it must: a failed test, a required test skipped or
/// missing, and model requests that lack what the suite sent.
#[test]
fn openresponses_reading_of_results_can_fail() {
    let mut results: Vec<Value> = REQUIRED
        .iter()
        .map(|id| json!({"id": id, "status": "passed"}))
        .collect();
    results.extend(
        OPTIONAL
            .iter()
            .map(|id| json!({"id": id, "status": "skipped"})),
    );
    assert_eq!(failures(&results).0, Vec::<String>::new());
    results[0] =
        json!({"id": "basic-response", "status": "failed", "errors": ["output: Required"]});
    results[1] = json!({"id": "streaming-response", "status": "skipped"});
    results.remove(2);
    let (summary, details) = failures(&results);
    assert_eq!(
        summary,
        [
            "basic-response (\"failed\"): output: Required",
            "streaming-response (\"skipped\"): ",
            "system-prompt: the suite did not run it"
        ]
    );
    assert_eq!(details.len(), 2);
    assert_eq!(unmet(&[]).len(), 7);
    let roundtrip = json!({"body": {"input": [{"type": "function_call_output", "call_id": "c", "output": "64 degrees and clear"}]}});
    assert_eq!(unmet(&[roundtrip]).len(), 6);
}

#[test]
#[ignore = "needs the Open Responses suite (../shared/peers/openresponses/run): run by .ci/run"]
fn openresponses_compliance_suite_passes_every_test() {
    let run = std::env::var_os("KILN_OPENRESPONSES")
        .map(PathBuf::from)
        .expect(
            "KILN_OPENRESPONSES is not set: .ci/run sets it to ../shared/peers/openresponses/run",
        );
    assert!(
        run.exists(),
        "KILN_OPENRESPONSES={} does not exist",
        run.display()
    );
    let mock = Mock::start(&scenario());
    let dir = scripts();
    let db = dir.path().join("kiln.db");
    let tokens = json!([{"token": TOKEN, "actor": "openresponses", "caps": []}]).to_string();
    let base = format!("{}/v1", mock.url);
    let serve = Serve::start(
        dir.path(),
        &db,
        &[],
        &[("KILN_TOKENS", &tokens), ("OPENAI_BASE_URL", &base)],
    );
    let (done, report) = run_suite(&run, &serve.url);
    let results = report["results"].as_array().cloned().unwrap_or_default();
    for r in &results {
        println!(
            "openresponses {:<24} {:<8} {:>6} ms",
            r["id"].as_str().unwrap_or("?"),
            r["status"].as_str().unwrap_or("?"),
            r["duration"].as_u64().unwrap_or(0)
        );
    }
    let requests = mock.requests();
    println!(
        "openresponses: {} in {:.1} s; the mock answered {} requests",
        report["summary"],
        done.took.as_secs_f64(),
        requests.len()
    );
    let (failed, details) = failures(&results);
    let missed = unmet(&requests);
    assert!(
        failed.is_empty() && done.code == Some(0) && missed.is_empty(),
        "the Open Responses suite failed (exit {:?}), {}:\n{}\n\nnot brought to the model:\n{}\n\n{}\n\nstderr:\n{}",
        done.code,
        report["summary"],
        failed.join("\n"),
        missed.join("\n"),
        details.join("\n\n"),
        done.stderr
    );
}
