//! Compaction (`.compact(#{ at, keep_last, how })`) through `kiln serve` against `kiln mock`:
//! a long session stays within its budget on every request, the summary request is the one
//! the scenario expects (kiln's summary prompt, the older turns as text), and the session and
//! the run log keep every turn as it was.

use crate::common::{Mock, Scripts, get, post};
use crate::doors::serve::Serve;
use serde_json::{Value, json};

const BUDGET: u64 = 2_000;

fn scenario() -> Value {
    json!({"loop": true, "turns": [
        {"system": "You compact a conversation", "text": "The customer asked about brick orders; every question was answered.",
         "usage": {"input_tokens": 500, "output_tokens": 50}},
        {"system": "You sell bricks", "text": "Noted."}
    ]})
}

fn clerk(mock: &Mock, with: &str) -> Scripts {
    Scripts::new(&[(
        "clerk.rhai",
        &format!(
            r#"agent("clerk").provider("openai").model("mock-model").base_url("{}/v1")
  .system("You sell bricks.").compact(#{{ at: {BUDGET}, keep_last: 2, how: "{with}" }});"#,
            mock.url
        ),
    )])
}

/// The estimated tokens of a request's messages, as kiln estimates them (4 bytes a token).
fn tokens(request: &Value) -> u64 {
    let bytes: usize = request["body"]["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["content"].as_str().map_or(0, str::len))
                .sum()
        })
        .unwrap_or(0);
    (bytes as u64).div_ceil(4)
}

fn is_summary(request: &Value) -> bool {
    request["body"]["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You compact a conversation"))
}

#[test]
fn a_thousand_turn_session_stays_within_its_budget_every_turn() {
    let mock = Mock::start(&scenario());
    let scripts = clerk(&mock, "summary");
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--no-stdlib"],
        &[],
    );
    let turns = 1_000;
    let mut compacting_runs = 0;
    for n in 0..turns {
        let question = format!(
            "Question {n}: how many bricks for wall {n}? {}",
            "detail ".repeat(60)
        );
        let (status, run) = post(
            &format!("{}/v1/runs", serve.url),
            &json!({"agent": "clerk", "input": question, "session": "long"}),
            &[],
        );
        assert_eq!(status, 200, "turn {n}: {run}");
        // A run whose request was compacted counts its summary request's tokens too.
        let input_tokens = run["report"]["usage"]["input_tokens"].as_u64();
        compacting_runs += usize::from(input_tokens >= Some(500));
    }
    let requests = mock.requests();
    let (summaries, turns_sent): (Vec<&Value>, Vec<&Value>) =
        requests.iter().partition(|r| is_summary(r));
    assert_eq!(
        turns_sent.len(),
        turns,
        "one request per turn besides the summaries"
    );
    for (n, r) in turns_sent.iter().enumerate() {
        assert!(tokens(r) <= BUDGET, "turn {n} sent {} tokens", tokens(r));
    }
    assert_eq!(
        compacting_runs,
        summaries.len(),
        "each summary's usage in its run"
    );
    assert!(
        summaries.len() > 10,
        "a long session is compacted again and again: {}",
        summaries.len()
    );
    let first = summaries[0]["body"]["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(first.starts_with("The conversation so far:"), "{first}");
    assert!(first.contains("User: Question 0:"), "{first}");
    // A compacted request starts with the summary; the session keeps every turn whole.
    let last = turns_sent.last().expect("a turn");
    let opening = last["body"]["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        opening.starts_with("Summary of the earlier conversation"),
        "{opening}"
    );
    let (_, session) = get(&format!("{}/v1/sessions/long", serve.url));
    let messages = session["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        messages.len(),
        2 * turns,
        "the session keeps the whole transcript"
    );
    assert!(
        messages[0]["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("Question 0:"))
    );
    // The run log keeps every turn as it was asked.
    let (_, runs) = get(&format!("{}/v1/runs?limit=1000", serve.url));
    let logged = runs["data"]
        .as_array()
        .or(runs["runs"].as_array())
        .map_or(0, Vec::len);
    assert!(logged >= 100, "{runs}");
}

#[test]
fn trimming_shortens_and_drops_the_oldest_turns_without_a_model_request() {
    let mock = Mock::start(&scenario());
    let scripts = clerk(&mock, "trim");
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--no-stdlib"],
        &[],
    );
    for n in 0..40 {
        let question = format!("Question {n}: {}", "detail ".repeat(60));
        let (status, run) = post(
            &format!("{}/v1/runs", serve.url),
            &json!({"agent": "clerk", "input": question, "session": "trimmed"}),
            &[],
        );
        assert_eq!(status, 200, "turn {n}: {run}");
    }
    let requests = mock.requests();
    assert!(!requests.iter().any(is_summary), "trimming asks no model");
    for r in &requests {
        assert!(tokens(r) <= BUDGET, "{} tokens", tokens(r));
    }
    let last = requests.last().expect("a request");
    let first_user = last["body"]["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        first_user.contains("earlier messages of this conversation were dropped"),
        "{first_user}"
    );
}

#[test]
fn a_compaction_that_names_a_model_has_that_model_write_the_summary() {
    let mock = Mock::start(&json!({"loop": true, "turns": [
        {"model": "summarizer", "system": "You compact a conversation", "text": "Bricks were discussed."},
        {"model": "mock-model", "system": "You sell bricks", "text": "Noted."}
    ]}));
    let scripts = Scripts::new(&[(
        "clerk.rhai",
        &format!(
            r#"agent("clerk").provider("openai").model("mock-model").base_url("{}/v1")
  .system("You sell bricks.").compact(#{{ at: 1000, keep_last: 2, model: "openai:summarizer" }});"#,
            mock.url
        ),
    )]);
    for n in 0..10 {
        let question = format!("Question {n}: {}", "detail ".repeat(80));
        super::ask_ok(scripts.path(), "clerk", &question, &["--session", "s"]);
    }
    let requests = mock.requests();
    let summaries: Vec<&Value> = requests.iter().filter(|r| is_summary(r)).collect();
    assert!(!summaries.is_empty(), "the session was compacted");
    assert!(
        summaries.iter().all(|r| r["body"]["model"] == "summarizer"),
        "the named model wrote every summary"
    );
    // The run log names the model that wrote each summary among the run's model replies.
    let out = crate::common::kiln(
        &["logs", "--json", "--no-stdlib", "--scripts", "."],
        scripts.path(),
    );
    let logs = String::from_utf8_lossy(&out.stdout);
    assert!(logs.contains("\"summarizer\""), "{logs}");
    assert!(
        requests
            .iter()
            .filter(|r| !is_summary(r))
            .all(|r| r["body"]["model"] == "mock-model")
    );
}
