//! The front door: `/v1/runs` on any `kiln serve --restate` worker submits to Restate's
//! ingress, and any worker answers for, and cancels, runs started through another. Also hot
//! reload on a worker.

use super::fixtures::{ALICE, BOB, Cluster, WAIT, ok_output, three_steps};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn tool_then(step: &str, answer: &str) -> Value {
    json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": step}}]}, {"text": answer},
    ]})
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_run_submitted_through_one_worker_is_awaited_through_another() {
    let c = Cluster::start(&[("front", three_steps("f"))]);
    let body = json!({"agent": "front", "input": "count", "wait": false});
    let (status, sent) = c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body));
    assert_eq!(status, 202, "{sent}");
    assert_eq!(
        (&sent["status"], &sent["agent"]),
        (&json!("running"), &json!("front"))
    );
    let id = sent["id"].as_str().expect("run id").to_string();
    assert!(
        id.starts_with("inv_"),
        "the run id is the invocation id: {id}"
    );

    // Another actor's token finds no such run, on any worker.
    let wait = format!("/v1/runs/{id}?wait=true");
    let (status, body) = c.api(1, BOB, "GET", &wait, &[], None);
    assert_eq!(status, 404, "{body}");
    let (status, done) = c.api(1, ALICE, "GET", &wait, &[], None);
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["id"], id.as_str(), "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["agent"], "front", "{done}");
    assert_eq!(done["report"]["answer"], "counted three", "{done}");
    assert_eq!(done["report"]["run_id"], id.as_str(), "{done}");
    // A finished run answers at once without waiting; its events end with the end.
    let (status, now) = c.api(0, ALICE, "GET", &format!("/v1/runs/{id}"), &[], None);
    assert_eq!(
        (status, &now["status"]),
        (200, &json!("completed")),
        "{now}"
    );
    let (status, events) = c.api(1, ALICE, "GET", &format!("/v1/runs/{id}/events"), &[], None);
    let events = events.as_str().unwrap_or_default().to_string();
    assert_eq!(status, 200, "{events}");
    assert!(
        events.contains("event: end") && events.contains("counted three"),
        "{events}"
    );
    let counts = c.counter.counts("f");
    assert!(
        counts.values().all(|keys| keys.len() == 1),
        "each step once: {counts:?}"
    );
    assert_eq!(counts.len(), 3, "{counts:?}");

    // Every wall of a local run stands in front of Restate too, and nothing is submitted.
    let post = |token: &str, body: Value| c.api(0, token, "POST", "/v1/runs", &[], Some(&body));
    let (status, body) = post(
        ALICE,
        json!({"agent": "front", "input": "x", "caps": ["net"]}),
    );
    assert_eq!(status, 403, "beyond the token's ceiling: {body}");
    assert!(
        body.to_string().contains("beyond what this token allows"),
        "{body}"
    );
    let (status, body) = post(
        "no-such-token-0123456789",
        json!({"agent": "front", "input": "x"}),
    );
    assert_eq!(status, 401, "{body}");
    let (status, body) = post(ALICE, json!({"agent": "nope", "input": "x"}));
    assert_eq!(
        (status, &body["error"]["code"]),
        (404, &json!("model_not_found")),
        "{body}"
    );
    let (status, body) = post(ALICE, json!({"agent": "plan", "input": "x"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("json_planner agent"), "{body}");
    let (status, body) = post(ALICE, json!({"agent": "front"}));
    assert_eq!(
        (status, &body["error"]["param"]),
        (400, &json!("input")),
        "{body}"
    );
    let (status, body) = c.api(0, ALICE, "GET", "/v1/runs/run_1", &[], None);
    assert_eq!(status, 404, "not an invocation id: {body}");
    assert_eq!(c.mock("front").requests().len(), 4, "only the one run ran");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn the_same_idempotency_key_through_the_front_door_runs_once() {
    let mut once = tool_then("d1", "done");
    once["loop"] = json!(true);
    let c = Cluster::start(&[("once", once), ("talk", tool_then("t1", "hello"))]);
    let key = [("idempotency-key", "order-17")];
    let body = json!({"agent": "once", "input": "go"});
    let first = ok_output(
        "first",
        c.api(0, ALICE, "POST", "/v1/runs", &key, Some(&body)),
    );
    let again = ok_output(
        "again",
        c.api(1, ALICE, "POST", "/v1/runs", &key, Some(&body)),
    );
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["id"], again["id"], "{first} {again}");
    assert_eq!(first["report"], again["report"]);
    assert_eq!(c.counter.counts("d").get("d1").map(Vec::len), Some(1));
    assert_eq!(
        c.mock("once").requests().len(),
        2,
        "one run: two model requests"
    );
    // Keys are per actor: Bob's "order-17" is a run of his own.
    let bobs = ok_output("bob", c.api(1, BOB, "POST", "/v1/runs", &key, Some(&body)));
    assert_ne!(bobs["id"], first["id"]);
    assert_eq!(c.counter.counts("d").get("d1").map(Vec::len), Some(2));

    // A session turn sent twice with one key runs once.
    let turn = json!({"agent": "talk", "input": "hi", "session": "s1"});
    let key = [("idempotency-key", "turn-1")];
    let first = ok_output(
        "turn",
        c.api(0, ALICE, "POST", "/v1/runs", &key, Some(&turn)),
    );
    let again = ok_output(
        "turn again",
        c.api(1, ALICE, "POST", "/v1/runs", &key, Some(&turn)),
    );
    assert_eq!(first["report"]["answer"], "hello", "{first}");
    assert_eq!(first["id"], again["id"]);
    assert_eq!(c.mock("talk").requests().len(), 2);
    assert_eq!(c.counter.counts("t").get("t1").map(Vec::len), Some(1));
    // Any worker shows the session from Restate, to its actor only, and deletes it.
    let path = "/v1/sessions/s1";
    let (status, session) = c.api(1, ALICE, "GET", path, &[], None);
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["agent"], "talk", "{session}");
    assert_eq!(session["state"], json!({"n": 1}), "{session}");
    assert_eq!(
        session["messages"].as_array().map(Vec::len),
        Some(4),
        "{session}"
    );
    assert_eq!(c.api(1, BOB, "GET", path, &[], None).0, 404);
    assert_eq!(c.api(1, BOB, "DELETE", path, &[], None).0, 404);
    // The session belongs to its agent.
    let other = json!({"agent": "once", "input": "hi", "session": "s1"});
    let (status, body) = c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&other));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "failed", "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("belongs to agent \"talk\""), "{body}");
    let (status, body) = c.api(0, ALICE, "DELETE", path, &[], None);
    assert_eq!(status, 204, "{body}");
    assert_eq!(c.api(1, ALICE, "GET", path, &[], None).0, 404);
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn cancelling_through_the_api_cancels_the_invocation_in_restate() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "x1"}}]},
        {"tool_calls": [{"name": "count", "args": {"step": "x2"}}]}, {"text": "not reached"},
    ]});
    let c = Cluster::start(&[("cancel", scenario)]);
    c.counter.hold("x1");
    let body = json!({"agent": "cancel", "input": "go", "wait": false});
    let sent = ok_output(
        "send",
        c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    let id = sent["id"].as_str().expect("run id").to_string();
    c.counter.wait_until("the tool step", |s| s.holding);
    let cancel = format!("/v1/runs/{id}/cancel");
    let (status, body) = c.api(1, BOB, "POST", &cancel, &[], None);
    assert_eq!(status, 404, "not Bob's run: {body}");
    let (status, body) = c.api(1, ALICE, "POST", &cancel, &[], None);
    assert_eq!(status, 202, "{body}");
    c.counter.release();
    let (status, done) = c.api(
        0,
        ALICE,
        "GET",
        &format!("/v1/runs/{id}?wait=true"),
        &[],
        None,
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "cancelled", "{done}");
    assert_eq!(done["error"]["kind"], "cancelled", "{done}");
    // Restate itself ended the invocation as cancelled.
    let query = format!("SELECT status, completion_failure FROM sys_invocation WHERE id = '{id}'");
    let (_, rows) = super::fixtures::http(
        "POST",
        &format!("{}/query", c.restate.admin),
        &[("accept", "application/json")],
        Some(&json!({ "query": query })),
    );
    let row = &rows["rows"][0];
    assert_eq!(row["status"], "completed", "{rows}");
    assert!(
        row["completion_failure"].to_string().contains("cancel"),
        "{rows}"
    );
    assert!(
        !c.counter.counts("x").contains_key("x2"),
        "no step after the cancel"
    );
    assert_eq!(
        c.mock("cancel").requests().len(),
        1,
        "no model request after the cancel"
    );
}

/// `kiln_reloads_total` of worker `i`.
fn reloads(c: &Cluster, i: usize) -> u64 {
    let (_, text) = c.api(i, ALICE, "GET", "/metrics", &[], None);
    let text = text.as_str().unwrap_or_default().to_string();
    text.lines()
        .find_map(|l| l.strip_prefix("kiln_reloads_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_worker_reloads_its_tools_and_the_log_records_the_version_that_ran() {
    let mut scenario = tool_then("r", "done");
    scenario["loop"] = json!(true);
    let c = Cluster::start(&[("reload", scenario)]);
    let body = json!({"agent": "reload", "input": "go"});
    let run = |c: &Cluster| ok_output("run", c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body)));
    let first = run(&c);
    let call = |r: &Value| r["report"]["tool_calls"][0].clone();
    assert_eq!(
        call(&first)["outcome"]["result"],
        "counted r (#1)",
        "{first}"
    );

    // Worker A (the one the proxy sends Restate to) gets a new version of the tool.
    let before = reloads(&c, 0);
    let src = std::fs::read_to_string(c.script_a()).expect("script");
    let edited = src.replace("`counted ${args.step}", "`tallied ${args.step}");
    assert_ne!(src, edited);
    std::fs::write(c.script_a(), edited).expect("edit script");
    let began = Instant::now();
    while reloads(&c, 0) == before {
        assert!(began.elapsed() < WAIT, "worker A never reloaded");
        std::thread::sleep(Duration::from_millis(50));
    }
    let second = run(&c);
    assert_eq!(
        call(&second)["outcome"]["result"],
        "tallied r (#1)",
        "{second}"
    );
    let (v1, v2) = (
        call(&first)["script_version"].clone(),
        call(&second)["script_version"].clone(),
    );
    assert_ne!(v1, v2, "a new version ran");

    // The run log has each run under its id with the version that ran.
    let logs = std::process::Command::new(crate::common::kiln_bin())
        .args(["logs", "--json", "--db"])
        .arg(c.db())
        .output()
        .expect("kiln logs");
    let logs: Value = serde_json::from_slice(&logs.stdout).expect("logs json");
    for (run, version) in [(&first, &v1), (&second, &v2)] {
        let logged = logs
            .as_array()
            .and_then(|runs| runs.iter().find(|r| r["id"] == run["id"]))
            .unwrap_or_else(|| panic!("the log has run {}: {logs}", run["id"]));
        assert_eq!(
            &logged["tool_calls"][0]["script_version"], version,
            "{logged}"
        );
    }
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_worker_without_a_free_run_slot_leaves_the_run_to_restate_to_retry() {
    let agents = [
        ("first", tool_then("w1", "one")),
        ("second", tool_then("w2", "two")),
    ];
    let c = Cluster::start_with(&agents, &["--max-runs", "1", "--queue", "0"]);
    c.counter.hold("w1");
    let submit = |agent: &str| {
        let body = json!({"agent": agent, "input": "go", "wait": false});
        let sent = ok_output(
            "submit",
            c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body)),
        );
        sent["id"].as_str().expect("run id").to_string()
    };
    let first = submit("first");
    c.counter
        .wait_until("the first run's tool step", |s| s.holding);
    let second = submit("second");
    // The one slot is taken: the second run's attempts fail and Restate backs off.
    let began = Instant::now();
    while c.restate.status(&second) != "backing-off" {
        assert!(began.elapsed() < WAIT, "the second run never backed off");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.mock("second").requests().len(), 0, "nothing of it ran");
    c.counter.release();
    for (id, answer) in [(first, "one"), (second, "two")] {
        let wait = format!("/v1/runs/{id}?wait=true");
        let done = ok_output("await", c.api(1, ALICE, "GET", &wait, &[], None));
        assert_eq!(done["report"]["answer"], answer, "{done}");
    }
}
