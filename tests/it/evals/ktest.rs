//! `kiln test` on the real binary: ok/FAILED lines, diffs, exit codes, deadlines, --filter,
//! --json, --junit (read back by Python's XML parser), run_agent, fake_http, the replay round
//! trip through `kiln logs --scenario`, `kiln init`, and --watch in a pseudo-terminal.

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const MATH: &str = r#"
tool("add").param("a", "number").param("b", "number").handler(|x| #{ sum: x.a + x.b });
tool("remember").requires("store").param("v", "string")
    .handler(|x| { store_set("notes", "last", x.v); store_get("notes", "last") });
tool("weather").requires("net").param("city", "string")
    .handler(|x| http_get(`https://api.weather.test/now?city=${x.city}`).json);
tool("slow").handler(|x| { sleep(3600); "late" });
agent("calc").provider("anthropic").model("m").tools(["add"]);
"#;

fn project(tests: &str) -> Scripts {
    Scripts::new(&[("math.rhai", MATH), ("math.test.rhai", tests)])
}

fn run_tests(s: &Scripts, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["test", "--scripts", "."];
    args.extend_from_slice(extra);
    kiln(&args, s.path())
}

#[test]
fn passing_and_failing_tests_print_lines_a_diff_the_summary_and_the_exit_code() {
    let s = project(
        r#"
test("adds", || assert_eq(call_tool("add", #{ a: 1, b: 2 }).result, #{ sum: 3 }));
test("adds wrong", || {
    let r = call_tool("add", #{ a: 1, b: 2 });
    assert_eq(r.result, #{ sum: 4 });
});
test("text", || assert_match(call_tool("add", #{ a: 1, b: 1 }).result.sum.to_string(), "^2$"));
"#,
    );
    let out = run_tests(&s, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}{}", stderr(&out));
    assert!(text.contains("test adds ... ok\n"), "{text}");
    assert!(text.contains("test text ... ok\n"), "{text}");
    assert!(text.contains("test adds wrong ... FAILED\n"), "{text}");
    assert!(
        text.contains("first difference at $.sum: expected 4, got 3"),
        "{text}"
    );
    assert!(text.contains("at ./math.test.rhai:5:5"), "{text}");
    assert!(text.trim_end().ends_with("2 passed, 1 failed"), "{text}");

    let out = run_tests(&s, &["--filter", "adds"]);
    assert!(
        stdout(&out).contains("1 passed, 1 failed"),
        "{}",
        stdout(&out)
    );
    let out = run_tests(&s, &["--filter", "text"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("1 passed, 0 failed"));
}

#[test]
fn a_test_file_that_does_not_load_fails_with_its_location() {
    let s = project("test(\"fine\", || assert(true));\n");
    write(
        s.path(),
        "broken.test.rhai",
        "test(\"x\", || {\n  let = 1;\n});\n",
    );
    write(
        s.path(),
        "twice.test.rhai",
        "test(\"a\", || 1);\ntest(\"a\", || 2);\n",
    );
    let out = run_tests(&s, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("test ./broken.test.rhai ... FAILED"),
        "{text}"
    );
    assert!(text.contains("./broken.test.rhai:2:7: "), "{text}");
    assert!(
        text.contains("test \"a\" is declared twice in this file\n  at ./twice.test.rhai:2:1"),
        "{text}"
    );
    assert!(text.contains("1 passed, 2 failed"), "{text}");
}

#[test]
fn capability_rules_hold_and_each_test_gets_its_own_store_workspace_and_fake_http() {
    let s = project(
        r#"
test("no grant, no store", || {
    assert_err(call_tool("remember", #{ v: "x" }), "capability");
});
test("granted store", || {
    assert_eq(call_tool("remember", #{ v: "x" }, #{ caps: ["store"] }).result, "x");
});
test("a fresh store", || {
    let r = call_tool("remember", #{ v: "y" }, #{ caps: ["store:other"] });
    assert_err(r, "denied");
});
test("fake http", || {
    fake_http("https://api.weather.test/*", #{ json: #{ temp: 21 } });
    let r = call_tool("weather", #{ city: "Oslo" }, #{ caps: ["net:api.weather.test"] });
    assert_eq(r.result, #{ temp: 21 });
    assert_eq(http_requests()[0].url, "https://api.weather.test/now?city=Oslo");
    assert_err(call_tool("weather", #{ city: "Oslo" }, #{ caps: ["net:elsewhere.test"] }), "denied");
});
test("no route, no network", || {
    let r = call_tool("weather", #{ city: "Oslo" }, #{ caps: ["net"] });
    assert_match(r.error.detail, "no fake_http route matches GET https://api.weather.test/now");
});
test("temporary workspace", || {
    let w = call_tool("write_file", #{ path: "a.txt", text: "hi" }, #{ caps: ["fs.write"] });
    assert_eq(w.success, true);
    assert_match(workspace(), "kiln-test-");
});
"#,
    );
    let out = run_tests(&s, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("6 passed, 0 failed"), "{text}");
    assert!(
        !s.path().join("a.txt").exists(),
        "the test wrote outside its temporary workspace"
    );
}

#[test]
fn hanging_tests_are_stopped_by_their_deadline() {
    let s = project(
        r#"
test("spins", || { loop { sleep(0.05); } });
test("calls a slow tool", || { let r = call_tool("slow", #{}); assert_eq(r.success, true); });
test("waits for a model", || {
    run_agent("calc", "hi", #{ model: [#{ text: "late", delay_ms: 3600000 }] });
});
test("quick", || assert(true));
"#,
    );
    let started = Instant::now();
    let out = run_tests(&s, &["--timeout", "1", "--jobs", "4"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("1 passed, 3 failed"), "{text}");
    for name in ["spins", "calls a slow tool", "waits for a model"] {
        assert!(text.contains(&format!("test {name} ... FAILED")), "{text}");
    }
    assert!(
        text.matches("ran past its deadline of 1.0s").count() >= 2,
        "the spinning test and the model wait: {text}"
    );
    // A safety net, not a timing claim: three 1 s deadlines, never an hour.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn tests_run_in_parallel() {
    // A rendezvous: both closures share `arrived`, and each waits until the other has come;
    // run one at a time, the first would wait until its deadline.
    let s = project(
        r#"
let arrived = [];
test("left", || { arrived.push("left"); while arrived.len() < 2 { sleep(0.01); } });
test("right", || { arrived.push("right"); while arrived.len() < 2 { sleep(0.01); } });
"#,
    );
    let out = run_tests(&s, &["--jobs", "2", "--timeout", "20"]);
    assert!(
        stdout(&out).contains("2 passed, 0 failed"),
        "{}",
        stdout(&out)
    );
    let out = run_tests(&s, &["--jobs", "1", "--timeout", "1"]);
    let text = stdout(&out);
    assert!(
        text.contains("1 passed, 1 failed"),
        "one at a time, the first waits: {text}"
    );
    assert!(text.contains("ran past its deadline"), "{text}");
}

#[test]
fn junit_xml_reads_back_in_a_junit_parser_and_json_matches() {
    let s = project(
        r#"
test("good", || assert_eq(1 + 1, 2));
test("bad <xml> & \"quotes\"", || { print("said <this>"); assert_eq("a\nb", "a\nc"); });
"#,
    );
    let junit = s.path().join("out/junit.xml");
    std::fs::create_dir_all(junit.parent().expect("parent")).expect("mkdir");
    let out = run_tests(&s, &["--junit", "out/junit.xml"]);
    assert_eq!(out.status.code(), Some(1));
    let parsed = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import json, sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = [{"name": c.get("name"), "suite": s.get("name"),
          "failure": (c.find("failure").text if c.find("failure") is not None else None),
          "out": (c.find("system-out").text if c.find("system-out") is not None else None)}
         for s in root.iter("testsuite") for c in s.iter("testcase")]
print(json.dumps({"tag": root.tag, "tests": root.get("tests"), "failures": root.get("failures"), "cases": cases}))
"#,
        )
        .arg(&junit)
        .output()
        .expect("python3 runs");
    assert!(parsed.status.success(), "{}", stderr(&parsed));
    let v: Value = serde_json::from_str(&stdout(&parsed)).expect("parser output");
    assert_eq!(v["tag"], "testsuites");
    assert_eq!(
        (v["tests"].as_str(), v["failures"].as_str()),
        (Some("2"), Some("1"))
    );
    let bad = &v["cases"][1];
    assert_eq!(bad["name"], "bad <xml> & \"quotes\"");
    assert_eq!(bad["suite"], "./math.test.rhai");
    let failure = bad["failure"].as_str().expect("failure text");
    assert!(failure.contains("first differing line 2"), "{failure}");
    assert!(failure.contains("  - c\n  + b"), "{failure}");
    assert_eq!(bad["out"], "said <this>\n");
    assert!(v["cases"][0]["failure"].is_null());

    let out = run_tests(&s, &["--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json output");
    assert_eq!(
        (v["passed"].as_u64(), v["failed"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(v["tests"][0]["ok"], true);
    assert_eq!(v["tests"][1]["line"], 3);
}

#[test]
fn run_agent_exposes_answer_calls_results_rounds_stop_reason_and_errors() {
    let s = project(
        r#"
test("scripted turns", || {
    let run = run_agent("calc", "1+2?", #{ model: [
        #{ text: "Adding. ", tool_calls: [#{ name: "add", args: #{ a: 1, b: 2 } }] },
        #{ text: "It is 3.", usage: #{ input_tokens: 7, output_tokens: 2 } },
    ] });
    assert_eq(run.answer, "It is 3.");
    assert_eq(run.rounds, 2);
    assert_eq(run.stop_reason, "end_turn");
    assert_eq(run.tool_calls[0].args, #{ a: 1, b: 2 });
    assert_eq(run.tool_calls[0].result, #{ sum: 3 });
    assert_eq(run.usage.input_tokens, 10 + 7);
    assert_eq(run.error, ());
});
test("bad arguments reach the model as errors", || {
    let run = run_agent("calc", "x", #{ model: [
        #{ tool_calls: [#{ name: "add", args: #{ a: "one" } }] },
        #{ text: "sorry" },
    ] });
    assert_err(run.tool_calls[0], "invalid_arguments");
    assert_eq(run.answer, "sorry");
});
test("a fault fails the run", || {
    let run = run_agent("calc", "x", #{ model: [#{ fault: #{ status: 400, message: "nope" } }] });
    assert_err(run, "provider");
});
test("limits come from the options", || {
    let run = run_agent("calc", "x", #{ caps: [], max_iterations: 1, model: [
        #{ tool_calls: [#{ name: "add", args: #{ a: 1, b: 1 } }] },
        #{ tool_calls: [#{ name: "add", args: #{ a: 1, b: 1 } }] },
        #{ text: "never" },
    ] });
    assert_err(run, "tool_loop");
});
test("a real model is never reached", || { run_agent("calc", "x"); });
"#,
    );
    let out = run_tests(&s, &[]);
    let text = stdout(&out);
    assert!(text.contains("4 passed, 1 failed"), "{text}");
    assert!(
        text.contains("tests never reach a real model: pass #{ model: [turns...] }"),
        "{text}"
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write");
}

#[test]
fn a_logged_run_exported_as_a_scenario_replays_strictly_until_a_tool_changes() {
    let s = project("");
    let mock = Mock::start(&json!({"turns": [
        {"text": "Adding. ", "tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}], "usage": {"input_tokens": 11, "output_tokens": 4}},
        {"text": "The sum is 5.", "usage": {"input_tokens": 30, "output_tokens": 5}}
    ]}));
    let asked = ask(
        &[
            "calc",
            "2+3?",
            "--scripts",
            ".",
            "--base-url",
            mock.url.as_str(),
        ],
        s.path(),
    );
    assert!(asked.status.success(), "{}", stderr(&asked));
    let logs = kiln(&["logs", "--json"], s.path());
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let id = runs[0]["id"].as_str().expect("run id").to_string();

    let unknown = kiln(&["logs", "run_nope", "--scenario"], s.path());
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("no run \"run_nope\" in the log"),
        "{}",
        stderr(&unknown)
    );
    let exported = kiln(&["logs", &id, "--scenario"], s.path());
    assert!(exported.status.success(), "{}", stderr(&exported));
    let scenario: Value = serde_json::from_str(&stdout(&exported)).expect("scenario json");
    assert_eq!(
        scenario["turns"][0]["tool_calls"][0]["args"],
        json!({"a": 2, "b": 3})
    );
    assert_eq!(scenario["turns"][1]["usage"]["input_tokens"], 30);
    assert_eq!(
        scenario["turns"][1]["expect"][0]["results"][0]["content"],
        "{\"sum\":5}"
    );
    write(s.path(), "run.json", &stdout(&exported));

    // The same file drives `kiln mock` for any other client.
    let again = Mock::start(&scenario);
    let replayed = ask(
        &[
            "calc",
            "2+3?",
            "--scripts",
            ".",
            "--base-url",
            again.url.as_str(),
        ],
        s.path(),
    );
    assert!(
        stdout(&replayed).contains("The sum is 5."),
        "{}",
        stderr(&replayed)
    );

    write(
        s.path(),
        "replay.test.rhai",
        r#"
test("replay", || {
    let run = run_agent("calc", "2+3?", #{ scenario: "run.json", strict: true });
    assert_eq(run.answer, "The sum is 5.");
});
test("another prompt", || { run_agent("calc", "3+2?", #{ scenario: "run.json", strict: true }); });
"#,
    );
    let out = run_tests(&s, &["replay.test.rhai"]);
    let text = stdout(&out);
    assert!(text.contains("test replay ... ok"), "{text}");
    assert!(
        text.contains("model request 1 differs from the recording (the user message)"),
        "{text}"
    );

    let changed = MATH.replace("#{ sum: x.a + x.b }", "#{ sum: x.a + x.b + 1 }");
    write(s.path(), "math.rhai", &changed);
    let out = run_tests(&s, &["replay.test.rhai", "--filter", "replay"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("test replay ... FAILED"), "{text}");
    assert!(
        text.contains(
            "strict replay: model request 2 differs from the recording (the result of tool \"add\")"
        ),
        "{text}"
    );
    assert!(
        text.contains(r#"at $[0].results[0].content: expected "{\"sum\":5}", got "{\"sum\":6}""#),
        "{text}"
    );
}

#[test]
fn init_makes_a_project_whose_tests_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = kiln(&["init", "proj"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let proj = dir.path().join("proj");
    for f in [
        "scripts/hello.rhai",
        "scripts/hello.test.rhai",
        "kiln.d.rhai",
    ] {
        assert!(proj.join(f).is_file(), "{f} missing");
    }
    let ignore = std::fs::read_to_string(proj.join(".gitignore")).expect("gitignore");
    assert!(ignore.lines().any(|l| l == ".kiln/"), "{ignore}");
    let defs = std::fs::read_to_string(proj.join("kiln.d.rhai")).expect("defs");
    assert!(defs.contains("fn tool("), "definitions list the DSL");
    assert!(defs.contains("fn run_agent("), "and the test functions");
    let out = kiln(&["test"], &proj);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("4 passed, 0 failed"),
        "{}",
        stdout(&out)
    );
    let out = kiln(&["check"], &proj);
    assert!(
        out.status.success(),
        "test files are not loaded as tools: {}",
        stderr(&out)
    );
    // A second init keeps what is there.
    write(&proj.join("scripts"), "hello.rhai", "// mine\n");
    let out = kiln(&["init", "proj"], dir.path());
    assert!(stdout(&out).contains("kept"), "{}", stdout(&out));
    let kept = std::fs::read_to_string(proj.join("scripts/hello.rhai")).expect("read");
    assert_eq!(kept, "// mine\n");
}

#[test]
fn watch_reruns_a_test_after_an_edit() {
    let s =
        project(r#"test("adds", || assert_eq(call_tool("add", #{ a: 1, b: 2 }).result.sum, 3));"#);
    let mut cmd = std::process::Command::new(kiln_bin());
    cmd.args(["test", "--watch", "--scripts", "."])
        .current_dir(s.path())
        .env("NO_COLOR", "1");
    let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn");
    p.exp_string("1 passed, 0 failed").expect("first run");
    p.exp_string("watching for changes").expect("watching");
    let changed = MATH.replace("#{ sum: x.a + x.b }", "#{ sum: x.a * x.b }");
    write(s.path(), "math.rhai", &changed);
    p.exp_string("test adds ... FAILED")
        .expect("re-run after the edit");
    p.exp_string("0 passed, 1 failed").expect("summary");
    write(s.path(), "math.rhai", MATH);
    p.exp_string("1 passed, 0 failed").expect("green again");
}

/// POSTs JSON on loopback and returns the body.
fn post_json(url: &str, headers: &[(&str, &str)], body: &Value) -> Value {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_once('/').expect("path");
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    let body = body.to_string();
    let mut req = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    write!(s, "{req}\r\n{body}").expect("send");
    let mut buf = String::new();
    s.read_to_string(&mut buf).expect("read");
    let (_, body) = buf.split_once("\r\n\r\n").expect("body");
    serde_json::from_str(body).expect("json reply")
}

#[test]
fn the_mock_keeps_a_cursor_per_client() {
    let mock = Mock::start(&json!({"turns": [{"text": "one"}, {"text": "two"}]}));
    let url = format!("{}/v1/chat/completions", mock.url);
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
    let say = |headers: &[(&str, &str)]| {
        post_json(&url, headers, &body)["choices"][0]["message"]["content"].clone()
    };
    assert_eq!(say(&[("authorization", "Bearer key-a")]), "one");
    assert_eq!(say(&[("authorization", "Bearer key-b")]), "one");
    assert_eq!(say(&[("authorization", "Bearer key-a")]), "two");
    // A header names a client explicitly, whatever its key.
    let as_c = [("authorization", "Bearer key-a"), ("x-kiln-client", "c")];
    assert_eq!(say(&as_c), "one");
    assert_eq!(say(&as_c), "two");
    // The same key on another wire is the same client.
    let anthropic = post_json(
        &format!("{}/v1/messages", mock.url),
        &[("x-api-key", "key-b"), ("anthropic-version", "2023-06-01")],
        &json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}),
    );
    assert_eq!(anthropic["content"][0]["text"], "two");
}

#[test]
fn the_examples_tests_pass() {
    let out = kiln(&["test", "examples/demo", "examples/catalog"], &repo());
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("8 passed, 0 failed"), "{text}");
}

/// A code-mode run exported as a scenario carries the calls its program made; a strict replay
/// compares them, so a changed tool is caught even when the program's value hides it.
#[test]
fn a_strict_replay_compares_the_calls_a_program_made() {
    let s = Scripts::new(&[
        ("math.rhai", MATH),
        (
            "coder.rhai",
            r#"agent("coder").provider("anthropic").model("m").tools(["add"]).code_mode();"#,
        ),
    ]);
    let program = "let s = add(#{ a: 1, b: 2 }).sum; add(#{ a: s, b: 1 }); \"done\"";
    let mock = Mock::start(&json!({"turns": [{"code": program}, {"text": "Done."}]}));
    let asked = ask(
        &[
            "coder",
            "go",
            "--scripts",
            ".",
            "--base-url",
            mock.url.as_str(),
        ],
        s.path(),
    );
    assert!(asked.status.success(), "{}", stderr(&asked));
    let logs = kiln(&["logs", "--json"], s.path());
    let runs: Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let id = runs[0]["id"].as_str().expect("run id").to_string();
    let exported = kiln(&["logs", &id, "--scenario"], s.path());
    assert!(exported.status.success(), "{}", stderr(&exported));
    let scenario: Value = serde_json::from_str(&stdout(&exported)).expect("scenario json");
    assert_eq!(
        scenario["turns"][0]["expect_calls"],
        json!([
            {"tool": "add", "args": {"a": 1, "b": 2}},
            {"tool": "add", "args": {"a": 3, "b": 1}}
        ])
    );
    write(s.path(), "run.json", &stdout(&exported));
    write(
        s.path(),
        "replay.test.rhai",
        r#"test("replay", || {
    let run = run_agent("coder", "go", #{ scenario: "run.json", strict: true });
    assert_eq(run.answer, "Done.");
});"#,
    );
    let out = run_tests(&s, &["replay.test.rhai"]);
    assert!(
        stdout(&out).contains("test replay ... ok"),
        "{}",
        stdout(&out)
    );

    write(
        s.path(),
        "math.rhai",
        &MATH.replace("#{ sum: x.a + x.b }", "#{ sum: x.a + x.b + 1 }"),
    );
    let out = run_tests(&s, &["replay.test.rhai"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "strict replay: the calls made by the program of model reply 1 differ from the recording's"
        ),
        "{text}"
    );
    assert!(text.contains("at $[1].args.a: expected 3, got 4"), "{text}");
}
