//! `progress(...)` and `emit(name, value)` from a handler, a code-mode program and a nested
//! agent, seen live on each door: `/v1/runs/{id}/events`, the chat completions and Responses
//! streams (only when asked with `"kiln": {"events": true}`), the run's report, `kiln logs`,
//! MCP (log messages) and a terminal's progress bar; bounded when a tool emits in a loop.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};

/// A tool that reports progress and emits events, an agent that calls it, one in code mode
/// and one that asks the first as a tool.
fn scripts(mock: &Mock) -> Scripts {
    let base = format!("{}/v1", mock.url);
    Scripts::new(&[(
        "crunch.rhai",
        &format!(
            r#"tool("crunch").description("Crunches rows").param("n", "integer").handler(|a| {{
    for i in 0..a.n {{
        progress(i + 1, a.n, `row ${{i + 1}}`);
        emit("row", #{{ i: i }});
    }}
    emit("summary", #{{ rows: a.n }});
    a.n
}});
tool("flood").description("Emits in a tight loop").param("n", "integer").handler(|a| {{
    for i in 0..a.n {{ emit("tick", i); }}
    a.n
}});
agent("cruncher").provider("openai").model("m").base_url("{base}").tools(["crunch", "flood"]);
agent("coder").provider("openai").model("m").base_url("{base}").tools(["crunch"]).code_mode();
agent("boss").provider("openai").model("m").base_url("{base}").tools(["agent:cruncher"]);
"#
        ),
    )])
}

/// The model calls `tool` with `args`, then answers "done".
fn scenario(tool: &str, args: Value) -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": tool, "args": args}]},
        {"text": "done"}
    ]})
}

/// An SSE body as (event, data) pairs.
fn sse(body: &str) -> Vec<(String, Value)> {
    crate::wires::responses_support::sse_events(body)
}

/// Runs `agent` through `/v1/runs` and reads its events afterwards (the stream replays them).
fn run_events(serve: &Serve, agent: &str) -> (Value, Vec<(String, Value)>) {
    let (status, run) = post(
        &format!("{}/v1/runs", serve.url),
        &json!({"agent": agent, "input": "go", "wait": true}),
        &[],
    );
    assert_eq!(status, 200, "{run}");
    let id = run["id"].as_str().expect("run id");
    let body = http_get(&format!("{}/v1/runs/{id}/events", serve.url));
    (run, sse(&body))
}

fn named<'a>(events: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, d)| d)
        .collect()
}

#[test]
fn a_handlers_progress_and_events_reach_the_run_stream_the_report_and_the_log() {
    let mock = Mock::start(&scenario("crunch", json!({"n": 3})));
    let dir = scripts(&mock);
    let db = dir.path().join("k.db");
    let serve = Serve::start(dir.path(), &db, &[], &[]);
    let (run, events) = run_events(&serve, "cruncher");
    let names: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| n.starts_with("tool"))
        .collect();
    assert_eq!(
        names,
        [
            "tool_started",
            "tool_progress",
            "tool_event",
            "tool_progress",
            "tool_event",
            "tool_progress",
            "tool_event",
            "tool_event",
            "tool_finished"
        ],
        "{events:?}"
    );
    let progress = named(&events, "tool_progress");
    assert_eq!(progress[2]["done"], 3.0);
    assert_eq!(progress[2]["total"], 3.0);
    assert_eq!(progress[2]["message"], "row 3");
    assert_eq!(progress[2]["name"], "crunch");
    let emitted = named(&events, "tool_event");
    assert_eq!(emitted[0]["event"], "row");
    assert_eq!(emitted[0]["value"], json!({"i": 0}));
    assert_eq!(emitted[3]["event"], "summary");
    assert_eq!(emitted[3]["id"], progress[0]["id"], "the same call");
    // The report and the run log keep them with the call.
    let notes = &run["report"]["tool_calls"][0]["notes"];
    assert_eq!(notes.as_array().map(Vec::len), Some(7), "{run:#}");
    assert_eq!(
        notes[6],
        json!({"kind": "emit", "name": "summary", "value": {"rows": 3}})
    );
    let id = run["id"].as_str().expect("id");
    let logs = kiln(&["logs", id, "--db", &db.display().to_string()], dir.path());
    let text = stdout(&logs);
    assert!(text.contains("· summary {\"rows\":3}"), "{text}");
    assert!(text.contains("· progress 3.0/3 row 3"), "{text}");
    let json_logs = kiln(
        &["logs", id, "--json", "--db", &db.display().to_string()],
        dir.path(),
    );
    let rows: Value = serde_json::from_str(&stdout(&json_logs)).expect("logs json");
    assert_eq!(rows[0]["tool_calls"][0]["notes"][6]["name"], "summary");
}

#[test]
fn a_call_from_the_consoles_tools_page_streams_them_too() {
    let mock = Mock::start(&scenario("crunch", json!({"n": 2})));
    let dir = scripts(&mock);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let (status, called) = post(
        &format!("{}/v1/tools/crunch", serve.url),
        &json!({"arguments": {"n": 2}}),
        &[],
    );
    assert_eq!(status, 200, "{called}");
    let run = called["run"].as_str().expect("run id");
    let events = sse(&http_get(&format!("{}/v1/runs/{run}/events", serve.url)));
    let notes: Vec<&str> = events
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n == "tool_progress" || *n == "tool_event")
        .collect();
    assert_eq!(notes.len(), 5, "{events:?}");
    let finished = named(&events, "tool_finished");
    assert_eq!(
        finished[0]["notes"].as_array().map(Vec::len),
        Some(5),
        "{events:?}"
    );
}

#[test]
fn the_openai_streams_carry_them_only_when_asked() {
    let mock = Mock::start(&scenario("crunch", json!({"n": 2})));
    let dir = scripts(&mock);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let chat = |events: bool| {
        let mut body = json!({"model": "cruncher", "stream": true,
            "messages": [{"role": "user", "content": "go"}]});
        if events {
            body["kiln"] = json!({"events": true});
        }
        let url = format!("{}/v1/chat/completions", serve.url);
        sse(&http("POST", &url, &[], Some(&body)).2)
    };
    let plain = chat(false);
    assert!(
        plain.iter().all(|(_, d)| d.get("kiln").is_none()),
        "{plain:?}"
    );
    let asked = chat(true);
    let kinds: Vec<&str> = asked
        .iter()
        .filter_map(|(_, d)| d["kiln"]["event"]["type"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_progress",
            "tool_event",
            "tool_progress",
            "tool_event",
            "tool_event"
        ]
    );
    let first = asked
        .iter()
        .find(|(_, d)| d.get("kiln").is_some())
        .expect("one");
    assert_eq!(
        first.1["choices"],
        json!([]),
        "no choices: SDKs pass it over"
    );
    assert_eq!(first.1["object"], "chat.completion.chunk");

    let responses = |events: bool| {
        let mut body = json!({"model": "cruncher", "stream": true, "input": "go", "store": false});
        if events {
            body["kiln"] = json!({"events": true});
        }
        sse(&http(
            "POST",
            &format!("{}/v1/responses", serve.url),
            &[],
            Some(&body),
        )
        .2)
    };
    let plain = responses(false);
    assert!(
        plain.iter().all(|(n, _)| !n.starts_with("kiln:")),
        "{plain:?}"
    );
    let asked = responses(true);
    let ours: Vec<&(String, Value)> = asked
        .iter()
        .filter(|(n, _)| n.starts_with("kiln:"))
        .collect();
    assert_eq!(ours.len(), 5, "{asked:?}");
    assert_eq!(ours[0].0, "kiln:tool_progress");
    assert_eq!(ours[0].1["type"], "kiln:tool_progress");
    assert_eq!(ours[4].1["event"], "summary");
    // Numbered in the one sequence with the rest.
    let seqs: Vec<u64> = asked
        .iter()
        .filter_map(|(_, d)| d["sequence_number"].as_u64())
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let (status, _, text) = http(
        "POST",
        &format!("{}/v1/responses", serve.url),
        &[],
        Some(&json!({"model": "cruncher", "input": "go", "kiln": {"events": "yes"}})),
    );
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("kiln.events must be true or false"), "{text}");
}

#[test]
fn a_programs_events_and_a_nested_agents_reach_the_outer_run() {
    let program = r#"emit("program", "start"); let n = crunch(#{ n: 2 }); progress(10, 10, "program done"); n"#;
    let mock = Mock::start(&scenario("run_code", json!({"code": program})));
    let dir = scripts(&mock);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let (run, events) = run_events(&serve, "coder");
    assert_eq!(run["status"], "completed", "{run:#}");
    let emitted: Vec<&Value> = named(&events, "tool_event");
    let names: Vec<&str> = emitted.iter().filter_map(|d| d["event"].as_str()).collect();
    assert_eq!(names, ["program", "row", "row", "summary"], "{events:?}");
    assert!(
        emitted.iter().all(|d| d["name"] == "run_code"),
        "the program's call"
    );
    let progress = named(&events, "tool_progress");
    assert_eq!(
        progress.last().map(|p| p["message"].clone()),
        Some(json!("program done"))
    );
    drop(serve);

    let mock = Mock::start_with(
        &json!({"turns": [
            {"tool_calls": [{"name": "ask_cruncher", "args": {"prompt": "crunch 2"}}]},
            {"tool_calls": [{"name": "crunch", "args": {"n": 2}}]},
            {"text": "crunched"},
            {"text": "done"}
        ]}),
        &[],
    );
    let dir = scripts(&mock);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let (run, events) = run_events(&serve, "boss");
    assert_eq!(run["report"]["answer"], "done", "{run:#}");
    let emitted = named(&events, "tool_event");
    let names: Vec<&str> = emitted.iter().filter_map(|d| d["event"].as_str()).collect();
    assert_eq!(names, ["row", "row", "summary"], "{events:?}");
    assert!(
        emitted.iter().all(|d| d["name"] == "ask_cruncher"),
        "{emitted:?}"
    );
}

#[test]
fn a_tool_emitting_in_a_tight_loop_reaches_a_client_bounded_with_its_last_value() {
    let mock = Mock::start(&scenario("flood", json!({"n": 100000})));
    let dir = scripts(&mock);
    let serve = Serve::start(dir.path(), &dir.path().join("k.db"), &[], &[]);
    let (run, events) = run_events(&serve, "cruncher");
    assert_eq!(run["report"]["tool_calls"][0]["outcome"]["result"], 100000);
    let ticks = named(&events, "tool_event");
    assert!((32..200).contains(&ticks.len()), "{} events", ticks.len());
    assert_eq!(ticks.last().map(|t| t["value"].clone()), Some(json!(99999)));
    assert!(
        run["report"]["tool_calls"][0]["notes"]
            .as_array()
            .map_or(0, Vec::len)
            <= 64
    );
}

#[test]
fn an_mcp_client_gets_progress_and_events_as_log_messages() {
    let dir = Scripts::new(&[(
        "t.rhai",
        r#"tool("crunch").description("c").param("n", "integer").handler(|a| { progress(1, 2); emit("row", #{ i: 0 }); a.n });"#,
    )]);
    let lines = mcp_stdio(
        dir.path(),
        &["--no-stdlib", "--scripts", "."],
        &[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "logging/setLevel", "params": {"level": "info"}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "crunch", "arguments": {"n": 2}, "_meta": {"progressToken": "p1"}}}),
        ],
    );
    let progress = lines
        .iter()
        .find(|l| l["method"] == "notifications/progress")
        .expect("progress");
    assert_eq!(progress["params"]["progressToken"], "p1");
    let event = lines
        .iter()
        .find(|l| l["method"] == "notifications/message")
        .expect("an event as a log message");
    assert_eq!(
        event["params"]["data"],
        json!({"event": "row", "value": {"i": 0}})
    );
    assert_eq!(event["params"]["logger"], "crunch");
}

#[test]
fn kiln_call_draws_a_bar_on_a_terminal_and_nothing_through_a_pipe() {
    let dir = Scripts::new(&[(
        "t.rhai",
        r#"tool("crunch").description("c").param("n", "integer").handler(|a| {
    for i in 0..a.n { let x = 0; for j in 0..20000 { x += j; } progress(i + 1, a.n, "rows"); }
    a.n
});"#,
    )]);
    let piped = kiln(
        &["call", "crunch", r#"{"n": 40}"#, "--scripts", "."],
        dir.path(),
    );
    assert!(piped.status.success(), "{}", stderr(&piped));
    let err = stderr(&piped);
    assert!(!err.contains("rows") && !err.contains('\u{1b}'), "{err:?}");
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/in_pty.py"))
        .arg(kiln_bin())
        .args(["call", "crunch", r#"{"n": 40}"#, "--scripts", "."])
        .current_dir(dir.path())
        .output()
        .expect("python3");
    let seen = String::from_utf8_lossy(&out.stdout).to_string();
    // Drawn at most 20 times a second: under load, the first frame may be the only one.
    assert!(
        seen.contains("crunch"),
        "a bar named for its tool: {seen:?}"
    );
    assert!(
        seen.contains('\u{1b}'),
        "drawn with the terminal's escapes: {seen:?}"
    );
}

#[test]
fn emit_refuses_a_bad_name_and_a_big_value_with_the_line() {
    let dir = Scripts::new(&[(
        "t.rhai",
        r#"tool("big").description("b").handler(|a| { let s = ""; for i in 0..2000 { s += "0123456789"; } emit("blob", s); 1 });
tool("odd").description("o").handler(|a| { emit("a b", 1); 1 });"#,
    )]);
    let big = kiln(&["call", "big", "{}", "--scripts", "."], dir.path());
    let text = stdout(&big);
    assert!(
        text.contains("bytes of JSON, over the 16384 allowed"),
        "{text}"
    );
    assert!(text.contains("t.rhai") && text.contains("line 1"), "{text}");
    let odd = kiln(&["call", "odd", "{}", "--scripts", "."], dir.path());
    let text = stdout(&odd);
    assert!(text.contains("the name \\\"a b\\\" must be"), "{text}");
    assert!(text.contains("t.rhai"), "names the file: {text}");
}
