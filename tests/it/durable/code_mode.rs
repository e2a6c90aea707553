//! Durable code mode: each call a program makes is a journaled step, so a program resumed on
//! another worker gets back the results of the calls it completed and makes only the rest.

use super::fixtures::{ALICE, Cluster, ok_output};
use serde_json::json;

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_program_whose_worker_is_killed_between_its_calls_repeats_none_that_completed() {
    let program = r#"let a = count(#{ step: "pa" });
let b = count(#{ step: "pb" });
let c = count(#{ step: "pc" });
let d = count(#{ step: "pd" });
[a, b, c, d]"#;
    let scenario = json!({"require_auth": false, "turns": [
        {"code": program},
        {"text": "counted four"},
    ]});
    let mut c = Cluster::start(&[("code", scenario)]);
    // Hold the program's third call at the counter, check calls 1-2 are journaled, kill A.
    c.counter.hold("pc");
    let body = json!({"agent": "code", "input": "count", "wait": false});
    let sent = ok_output(
        "submit through B",
        c.api(1, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    let inv = sent["id"].as_str().expect("run id").to_string();
    c.counter
        .wait_until("the program's third call to start", |s| s.holding);
    let parent = "tool-1-call_mock_0_0";
    let journal = c.restate.journal(&inv);
    let steps: Vec<&str> = journal
        .iter()
        .filter(|(t, _)| t == "Command: Run")
        .map(|(_, n)| n.as_str())
        .collect();
    let completed = journal
        .iter()
        .filter(|(t, _)| t == "Notification: Run")
        .count();
    let nested = |i: u32| format!("{parent}/{i}");
    // The third call's step may already be announced (its command), never completed.
    let announced = nested(3);
    let before: Vec<&str> = steps
        .iter()
        .copied()
        .filter(|s| *s != announced.as_str())
        .collect();
    assert_eq!(
        (before, completed),
        (vec!["model-1", nested(1).as_str(), nested(2).as_str()], 3),
        "the model request and calls 1-2 journaled before the kill: {journal:?}"
    );
    c.kill(0);
    c.counter.release();
    let wait = format!("/v1/runs/{inv}?wait=true");
    let done = ok_output("await through B", c.api(1, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    let report = &done["report"];

    let counts = c.counter.counts("p");
    let ran = |step: &str| counts.get(step).map_or(0, Vec::len);
    assert_eq!(
        (ran("pa"), ran("pb"), ran("pc"), ran("pd")),
        (1, 1, 2, 1),
        "completed calls ran once, the one in flight again: {counts:?}"
    );
    assert_eq!(
        counts["pc"][0], counts["pc"][1],
        "one idempotency key per call"
    );
    assert_eq!(counts["pc"][0], format!("{inv}/{}", nested(3)));
    assert_eq!(
        c.mock("code").requests().len(),
        2,
        "no model request repeated"
    );
    // Calls 1-2 came back from the journal with the ctx.state they left, so 3 counted on.
    assert_eq!(
        report["tool_calls"][0]["outcome"]["result"],
        json!([
            "counted pa (#1)",
            "counted pb (#2)",
            "counted pc (#3)",
            "counted pd (#4)"
        ]),
        "{report}"
    );
    let ids: Vec<&str> = report["tool_calls"][0]["nested"]
        .as_array()
        .map(|n| n.iter().filter_map(|c| c["id"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        ids,
        [
            "call_mock_0_0/1",
            "call_mock_0_0/2",
            "call_mock_0_0/3",
            "call_mock_0_0/4"
        ]
    );
    assert_eq!(report["answer"], "counted four");
}
