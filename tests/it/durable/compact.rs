//! Compaction on Restate (`.compact(#{ at, keep_last, how: "summary" })`): a durable session
//! compacts once across a worker kill, whether the worker dies in the turn that compacted
//! (the summary is journaled) or in a later turn that sent the compacted beginning without
//! asking again (the beginning it started from is journaled): the worker resuming it reads
//! them back instead of asking for a summary again, or diverging from the journal.

use super::fixtures::{Cluster, ok_output};
use serde_json::{Value, json};

/// Whether the mock's request is a summary request (kiln's summary prompt as its system).
fn is_summary(request: &Value) -> bool {
    request["body"]["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You compact a conversation"))
}

/// One turn of session `cs` through the ingress, waited for: its report.
fn turn(c: &Cluster, prompt: &str) -> Value {
    let body = json!({"agent": "compact", "prompt": prompt});
    ok_output("turn", c.post("/KilnSession/cs/turn", None, &body))
}

/// A turn of session `cs` sent without waiting, its tool `step` held at the counter once it
/// runs: the turn's invocation id.
fn held_turn(c: &Cluster, prompt: &str, step: &str) -> String {
    c.counter.hold(step);
    let body = json!({"agent": "compact", "prompt": prompt});
    let sent = ok_output("send", c.post("/KilnSession/cs/turn/send", None, &body));
    c.counter.wait_until("the turn's tool step", |s| s.holding);
    sent["invocationId"]
        .as_str()
        .expect("invocation id")
        .to_string()
}

/// How many summary requests the mock received.
fn summaries(c: &Cluster) -> usize {
    let requests = c.mock("compact").requests();
    requests.iter().filter(|r| is_summary(r)).count()
}

/// The first turn: over the budget alone, but with nothing older to compact.
fn first_turn(c: &Cluster) {
    let first = format!("Remember wall one: {}", "detail ".repeat(700));
    assert_eq!(turn(c, &first)["answer"], "one");
    assert_eq!(summaries(c), 0);
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_turn_killed_after_compacting_resumes_without_asking_again() {
    let scenario = json!({"require_auth": false, "turns": [
        {"text": "one"},
        {"text": "The customer described wall one in detail."},
        {"tool_calls": [{"name": "count", "args": {"step": "k2"}}]},
        {"text": "two"},
        {"text": "three"},
    ]});
    let mut c = Cluster::start(&[("compact", scenario)]);
    first_turn(&c);
    // Turn 2 compacts turn 1, then its tool is held and worker A killed.
    let inv = held_turn(&c, "How many bricks?", "k2");
    assert_eq!(summaries(&c), 1, "turn 2 compacted");
    let steps: Vec<String> = c
        .restate
        .journal(&inv)
        .into_iter()
        .filter(|(t, _)| t == "Command: Run")
        .map(|(_, n)| n)
        .collect();
    assert!(steps.contains(&"compact-1".to_string()), "{steps:?}");
    c.kill(0);
    c.counter.release();
    let report = ok_output(
        "turn 2 on worker B",
        c.get(&format!("/restate/invocation/{inv}/attach")),
    );
    assert_eq!(report["answer"], "two", "{report}");
    // Worker B read the summary back from the journal, and remembers it for turn 3.
    assert_eq!(turn(&c, "And wall three?")["answer"], "three");
    let requests = c.mock("compact").requests();
    assert_eq!(requests.len(), 5, "no request repeated: {requests:?}");
    assert_eq!(summaries(&c), 1, "one summary request across the kill");
    for r in &requests[2..] {
        let opening = r["body"]["messages"][0]["content"]
            .as_str()
            .unwrap_or_default();
        assert!(
            opening.starts_with("Summary of the earlier conversation"),
            "worker B sends the compacted beginning: {opening}"
        );
    }
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_durable_session_compacts_once_across_a_worker_kill() {
    let scenario = json!({"require_auth": false, "turns": [
        {"text": "one"},
        {"text": "The customer described wall one in detail."},
        {"text": "two"},
        {"tool_calls": [{"name": "count", "args": {"step": "c3"}}]},
        {"text": "three"},
    ]});
    let mut c = Cluster::start(&[("compact", scenario)]);
    first_turn(&c);
    // Turn 2 compacts turn 1 (one summary request), on worker A.
    assert_eq!(turn(&c, "How many bricks?")["answer"], "two");
    assert_eq!(summaries(&c), 1, "turn 2 compacted");

    // Turn 3 sends the beginning turn 2 compacted (no summary request); its tool is held and
    // worker A killed.
    let inv = held_turn(&c, "Count wall three.", "c3");
    let requests = c.mock("compact").requests();
    assert_eq!(requests.len(), 4, "{requests:?}");
    let opening = requests[3]["body"]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        opening.starts_with("Summary of the earlier conversation"),
        "turn 3 sends the compacted beginning: {opening}"
    );
    c.kill(0);
    c.counter.release();
    let url = format!("/restate/invocation/{inv}/attach");
    let report = ok_output("turn 3 on worker B", c.get(&url));
    assert_eq!(report["answer"], "three", "{report}");

    let requests = c.mock("compact").requests();
    assert_eq!(requests.len(), 5, "no request repeated: {requests:?}");
    assert_eq!(summaries(&c), 1, "one summary request across the kill");
    let opening = requests[4]["body"]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(
        opening.starts_with("Summary of the earlier conversation"),
        "worker B sends the same beginning: {opening}"
    );
    // The session keeps every message of its three turns.
    let messages = report["messages"].as_array().map(Vec::len);
    assert_eq!(messages, Some(8), "{report}");
    assert_eq!(
        c.counter.counts("c3")["c3"].len(),
        2,
        "the step in flight ran again"
    );
}
