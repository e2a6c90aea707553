//! Planner mode and free-text extraction against `kiln mock` text replies.

use crate::common::*;
use serde_json::{Value, json};

const PLANNER: &str = r#"
tool("note").param("text", "string", #{ min_length: 1 }).handler(|a, ctx| { ctx.state.notes = (ctx.state.notes ?? 0) + 1; #{ status: "ok", text: a.text } });
tool("finish").param("answer", "string").handler(|a| #{ status: "done", answer: a.answer });
tool("secret").requires("vault").handler(|a| "s3cret");
for p in ["ollama", "openai"] {
    agent(`plan_${p}`).mode("json_planner").provider(p).model("small").tools(["note", "finish"]).max_steps(3)
        .validator(|tool, args| {
            if tool == "note" && args.text == "forbidden" { throw "no forbidden notes"; }
            if tool == "note" && args.text == "shout" { args.text = "SHOUT"; }
            args
        });
}
"#;

fn planner_run(provider: &str, replies: &[&str]) -> (Value, std::process::Output, Mock) {
    let s = Scripts::new(&[("p.rhai", PLANNER)]);
    let (v, out, mock) = planner_run_in(&s, provider, replies, &[]);
    (v, out, mock)
}

/// A planner run in `s` (its database is `s/.kiln/kiln.db`), with extra `kiln ask` flags.
fn planner_run_in(
    s: &Scripts,
    provider: &str,
    replies: &[&str],
    extra: &[&str],
) -> (Value, std::process::Output, Mock) {
    let turns: Vec<Value> = replies.iter().map(|t| json!({"text": t})).collect();
    let mock = Mock::start(&json!({"turns": turns}));
    let base = if provider == "openai" {
        format!("{}/v1", mock.url)
    } else {
        mock.url.clone()
    };
    let agent = format!("plan_{provider}");
    let mut args = vec![
        agent.as_str(),
        "Write a note, then finish.",
        "--scripts",
        ".",
        "--base-url",
        &base,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = ask(&args, s.path());
    let v: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    (v, out, mock)
}

#[test]
fn bare_fenced_and_prose_wrapped_plans_run_until_done() {
    for provider in ["ollama", "openai"] {
        let (v, out, mock) = planner_run(
            provider,
            &[
                "```json\n{\"tool\": \"note\", \"args\": {\"text\": \"first\"}, \"thought\": \"start\"}\n```",
                "Sure! I will now finish: {\"tool\": \"finish\", \"args\": {\"answer\": \"all {done}\"}} Hope that helps.",
            ],
        );
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        let steps = v["steps"].as_array().expect("steps in --json");
        assert_eq!(steps.len(), 2);
        assert_eq!(steps[0]["thought"], "start");
        assert_eq!(
            steps[0]["action"],
            json!({"tool": "note", "args": {"text": "first"}})
        );
        assert_eq!(
            steps[1]["result"],
            json!({"status": "done", "answer": "all {done}"})
        );
        let answer: Value =
            serde_json::from_str(v["answer"].as_str().expect("answer")).expect("answer is JSON");
        assert_eq!(
            answer,
            json!({"status": "done", "answer": "all {done}"}),
            "the last result is returned"
        );
        let second_prompt = mock.requests()[1]["body"].to_string();
        assert!(
            second_prompt.contains("Prior steps") && second_prompt.contains("first"),
            "memory reaches the planner prompt"
        );
        assert!(
            second_prompt.contains("args schema"),
            "tools with schemas are shown"
        );
        assert!(
            mock.requests()[0]["body"].get("tools").is_none(),
            "no native tools are sent in planner mode"
        );
    }
}

#[test]
fn two_objects_or_none_are_json_parse_errors_quoting_the_model() {
    for (reply, want) in [
        (
            r#"{"tool": "note", "args": {"text": "a"}} {"tool": "finish", "args": {"answer": "b"}}"#,
            "expected one JSON object, found 2",
        ),
        (
            "I am not sure what to do.",
            "no JSON object found; the model said: \"I am not sure what to do.\"",
        ),
        ("{\"tool\": \"note\", \"args\": {", "no JSON object found"),
    ] {
        let (v, out, _m) = planner_run("ollama", &[reply]);
        assert_eq!(out.status.code(), Some(1));
        assert!(
            stderr(&out).contains("JsonParseError") && stderr(&out).contains(want),
            "{}",
            stderr(&out)
        );
        assert!(
            v["error"]
                .as_str()
                .is_some_and(|e| e.contains("JsonParseError"))
        );
    }
}

#[test]
fn unknown_tools_are_invalid_plans_and_bad_args_or_validator_rejections_are_error_steps() {
    let (_, out, _m) = planner_run("ollama", &[r#"{"tool": "secret", "args": {}}"#]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("InvalidPlanError: unknown tool \"secret\" (available: note, finish)"),
        "{}",
        stderr(&out)
    );

    let (v, out, _m) = planner_run(
        "ollama",
        &[
            r#"{"tool": "note", "args": {"text": ""}}"#,
            r#"{"tool": "note", "args": {"text": "forbidden"}}"#,
            r#"{"tool": "finish", "args": {"answer": "ok"}}"#,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let steps = v["steps"].as_array().expect("steps");
    assert_eq!(steps[0]["result"]["status"], "error");
    assert!(
        steps[0]["result"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("invalid arguments: /text")),
        "{}",
        steps[0]
    );
    assert!(
        steps[1]["result"]["error"].as_str().is_some_and(|e| e
            .contains("rejected by the validator")
            && e.contains("no forbidden notes")),
        "{}",
        steps[1]
    );
    assert_eq!(steps[2]["result"]["status"], "done");
}

fn logged_runs(s: &Scripts) -> Vec<Value> {
    let out = kiln(&["logs", "--json"], s.path());
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str::<Value>(&stdout(&out))
        .expect("logs json")
        .as_array()
        .cloned()
        .expect("runs")
}

fn roles(run: &Value) -> Vec<String> {
    run["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn every_planner_step_is_logged_with_the_arguments_that_ran_and_the_session_state() {
    let s = Scripts::new(&[("p.rhai", PLANNER)]);
    let (v, out, _m) = planner_run_in(
        &s,
        "ollama",
        &[
            r#"{"tool": "note", "args": {"text": "shout"}}"#,
            r#"{"tool": "note", "args": {"text": ""}}"#,
            r#"{"tool": "finish", "args": {"answer": "ok"}}"#,
        ],
        &["--session", "plans"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        v["tool_calls"][0]["args"],
        json!({"text": "SHOUT"}),
        "the report holds the validator's arguments"
    );
    assert_eq!(v["steps"][0]["action"]["args"], json!({"text": "SHOUT"}));
    let runs = logged_runs(&s);
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["status"], "ok");
    assert_eq!(run["rounds"], 3);
    let calls: Vec<(Value, Value, Value, Value)> = run["tool_calls"]
        .as_array()
        .expect("tool calls")
        .iter()
        .map(|c| {
            (
                c["round"].clone(),
                c["name"].clone(),
                c["args"].clone(),
                c["is_error"].clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                json!(1),
                json!("note"),
                json!({"text": "SHOUT"}),
                json!(false)
            ),
            (json!(2), json!("note"), json!({"text": ""}), json!(true)),
            (
                json!(3),
                json!("finish"),
                json!({"answer": "ok"}),
                json!(false)
            ),
        ],
        "every step's call, with the arguments that ran"
    );
    assert_eq!(
        roles(run),
        vec!["user", "assistant", "assistant", "assistant"]
    );
    let text = stdout(&kiln(&["logs"], s.path()));
    assert!(text.contains("3 rounds, 3 tool calls"), "{text}");
    let show: Value =
        serde_json::from_str(&stdout(&kiln(&["sessions", "show", "plans"], s.path())))
            .expect("session json");
    assert_eq!(show["state"]["notes"], 1, "the session state is committed");
}

#[test]
fn a_planner_step_that_ends_the_run_is_still_logged() {
    let s = Scripts::new(&[("p.rhai", PLANNER)]);
    let (_, out, _m) = planner_run_in(
        &s,
        "openai",
        &[r#"{"tool": "note", "args": {"text": "a"}}"#, "no plan here"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1));
    let runs = logged_runs(&s);
    let run = &runs[0];
    assert_eq!(run["status"], "error");
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("JsonParseError")),
        "{run}"
    );
    assert_eq!(run["tool_calls"].as_array().map(Vec::len), Some(1));
    let messages = run["messages"].as_array().expect("messages");
    assert_eq!(roles(run), vec!["user", "assistant", "assistant"]);
    assert_eq!(
        messages[2]["content"], "no plan here",
        "the reply that ended the run is kept"
    );
}

#[test]
fn max_steps_exceeded() {
    let (v, out, _m) = planner_run(
        "openai",
        &[
            r#"{"tool": "note", "args": {"text": "a"}}"#,
            r#"{"tool": "note", "args": {"text": "b"}}"#,
            r#"{"tool": "note", "args": {"text": "c"}}"#,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("MaxStepsExceeded: no tool returned status \"done\" within 3 steps"),
        "{}",
        stderr(&out)
    );
    assert_eq!(v["steps"].as_array().map(Vec::len), Some(3));
}

#[test]
fn the_offline_planner_example_runs() {
    let out = kiln(
        &[
            "ask",
            "planner_offline",
            "What is six times seven?",
            "--scripts",
            "examples/planner",
        ],
        &repo(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        r#"{"answer":"The answer is 42.","status":"done"}"#
    );
}

#[test]
fn free_text_extraction_runs_every_call_and_formats_feedback() {
    use std::io::Write;
    let text = r#"I'll calculate that. {"tool": "calculator", "parameters": {"operation": "add", "a": 10, "b": 5}}
Then {"tool": "string_manipulation", "args": {"operation": "uppercase", "text": "hi"}} and {"tool": "calculator", "parameters": {"operation": "divide", "a": 1, "b": 0}}
and {"tool": "nope", "args": {}} plus {"tool": "storage", "parameters": {"operation": "list"}}"#;
    // A folder without scripts/: only the stdlib is loaded.
    let cwd = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(kiln_bin())
        .arg("extract")
        .current_dir(cwd.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(1), "some calls failed");
    assert_eq!(
        stdout(&out),
        "Tool Results:\n✓ calculator: 15.0\n✓ string_manipulation: HI\n✗ calculator: division by zero\n✗ nope: Unknown tool: nope. Available tools: calculator, http_fetch, read_file, list_dir, write_file, storage, string_manipulation, current_time\n✗ storage: Tool \"storage\" requires capabilities [store] but the caller only has []\n"
    );
}
