//! A run's transcript is capped in bytes: a provider whose every reply carries a large
//! reasoning item (sent back on each later request) grows a run's requests round by round,
//! and the run ends with a `limit` error naming the cap and the size before it sends one past
//! the cap (`--max-transcript-bytes`, default 16 MiB).

use crate::common::*;
use serde_json::{Value, json};

const THINKER: &str = r#"
tool("lookup").description("Look something up").param("q", "string").handler(|a| "nothing");
agent("think").provider("openai-responses").model("m").tools(["lookup"]).max_tool_iterations(40);
"#;

/// A mock whose `rounds` replies each think `reasoning` bytes and call `lookup`.
fn thinking_mock(rounds: usize, reasoning: usize) -> Mock {
    let thought = "t".repeat(reasoning);
    let turn =
        json!({"reasoning": thought, "tool_calls": [{"name": "lookup", "args": {"q": "x"}}]});
    let mut turns = vec![turn; rounds];
    turns.push(json!({"text": "done"}));
    Mock::start(&json!({"turns": turns}))
}

/// `kiln ask think` against `mock` with `extra` flags: its JSON report and its output.
fn ask_think(s: &Scripts, mock: &Mock, extra: &[&str]) -> (Value, std::process::Output) {
    let base = format!("{}/v1", mock.url);
    let mut args = vec![
        "think",
        "go",
        "--scripts",
        ".",
        "--no-stdlib",
        "--base-url",
        &base,
    ];
    args.extend_from_slice(&["--json", "--no-stream"]);
    args.extend_from_slice(extra);
    let out = ask(&args, s.path());
    let v = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    (v, out)
}

/// The largest request body the mock received, in bytes.
fn largest_request(mock: &Mock) -> usize {
    (mock.requests().iter())
        .map(|r| r["body"].to_string().len())
        .max()
        .unwrap_or(0)
}

#[test]
fn a_transcript_past_its_cap_ends_the_run_with_a_limit_error_naming_cap_and_size() {
    let s = Scripts::new(&[("t.rhai", THINKER)]);
    let mock = thinking_mock(12, 512 << 10);
    let (_, out) = ask_think(&s, &mock, &["--max-transcript-bytes", "2M"]);
    assert!(!out.status.success(), "the run went on: {}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("LimitError"), "{said}");
    assert!(said.contains("over the cap of 2097152 bytes"), "{said}");
    assert!(said.contains("--max-transcript-bytes"), "{said}");
    let sent = mock.requests().len();
    assert!((3..12).contains(&sent), "{sent} requests");
    assert!(
        largest_request(&mock) <= 2 << 20,
        "{}",
        largest_request(&mock)
    );
}

#[test]
fn by_default_a_run_stops_before_sending_16_mib() {
    let s = Scripts::new(&[("t.rhai", THINKER)]);
    let mock = thinking_mock(10, 4 << 20);
    let (v, out) = ask_think(&s, &mock, &[]);
    assert!(!out.status.success(), "the run went on: {}", stderr(&out));
    assert!(v["messages"].is_array(), "the report of the run so far");
    let said = stderr(&out);
    assert!(said.contains("over the cap of 16777216 bytes"), "{said}");
    assert!(
        largest_request(&mock) <= 16 << 20,
        "{}",
        largest_request(&mock)
    );
}
