//! Decisions on durable approvals (issue 41, item 7): exactly one decision takes effect, and
//! the answer to each says whether it did. A decision that lost (to another person's, to the
//! deadline) is a `409` carrying the decision that won; the pending list ends with the deadline
//! even when no worker ran the run at that moment.

use super::fixtures::{ALICE, Cluster, http, ok_output};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Polls the run through worker `i` until it waits for an approval not in `seen`; its id.
fn next_approval(c: &Cluster, i: usize, id: &str, seen: &[String]) -> String {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let now = ok_output(
            "status",
            c.api(i, ALICE, "GET", &format!("/v1/runs/{id}"), &[], None),
        );
        let fresh = now["approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["id"].as_str())
            .find(|a| !seen.iter().any(|s| s == a));
        if let Some(approval) = fresh {
            return approval.to_string();
        }
        assert!(Instant::now() < end, "no new approval in time: {now}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Submits a run of `agent` through worker A; its id.
fn submit(c: &Cluster, agent: &str) -> String {
    let body = json!({"agent": agent, "input": "count", "wait": false});
    let sent = ok_output(
        "submit",
        c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    sent["id"].as_str().expect("run id").to_string()
}

/// Approves through worker `i` an approval that was already closed: the 409's decision that
/// won, and the whole answer.
fn approve_too_late(c: &Cluster, i: usize, id: &str, approval: &str) -> (Value, Value) {
    let path = format!("/v1/runs/{id}/approvals/{approval}");
    let decision = json!({"decision": "approve"});
    let (status, body) = c.api(i, ALICE, "POST", &path, &[], Some(&decision));
    (winner(status, &body).clone(), body)
}

/// The run's end, awaited through worker `i`: the outcomes of its tool calls, in order.
fn outcomes(c: &Cluster, i: usize, id: &str) -> Vec<String> {
    let wait = format!("/v1/runs/{id}?wait=true");
    let done = ok_output("await", c.api(i, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    done["report"]["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["outcome"].to_string())
        .collect()
}

/// The decision a `409` answer says won.
fn winner(status: u16, body: &Value) -> &Value {
    assert_eq!(status, 409, "a decision that did not take effect: {body}");
    assert_eq!(body["error"]["code"], "approval_decided", "{body}");
    &body["error"]["decision"]
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn two_decisions_racing_through_two_workers_one_takes_effect_and_the_other_gets_409() {
    const TRIALS: usize = 4;
    let call =
        |k: usize| json!({"tool_calls": [{"name": "count", "args": {"step": format!("r{k}")}}]});
    let mut turns: Vec<Value> = (0..TRIALS).map(call).collect();
    turns.push(json!({"text": "raced"}));
    let scenario = json!({"require_auth": false, "turns": turns});
    let c = Cluster::start(&[("askrace", scenario)]);
    let id = submit(&c, "askrace");
    let mut seen = Vec::new();
    let mut approved = Vec::new();
    for k in 0..TRIALS {
        let approval = next_approval(&c, 1, &id, &seen);
        seen.push(approval.clone());
        let path = format!("/v1/runs/{id}/approvals/{approval}");
        let deny = json!({"decision": "deny", "reason": format!("trial {k}")});
        let approve = json!({"decision": "approve"});
        // Approve through A and deny through B at the same moment.
        let start = std::sync::Barrier::new(2);
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| {
                start.wait();
                c.api(0, ALICE, "POST", &path, &[], Some(&approve))
            });
            let b = s.spawn(|| {
                start.wait();
                c.api(1, ALICE, "POST", &path, &[], Some(&deny))
            });
            (a.join().expect("A"), b.join().expect("B"))
        });
        let answers = format!("trial {k}: approve {a:?}, deny {b:?}");
        let won_approve = match (a.0, b.0) {
            (200, _) => {
                assert_eq!(winner(b.0, &b.1)["decision"], "approve", "{answers}");
                true
            }
            (_, 200) => {
                let won = winner(a.0, &a.1);
                assert_eq!(won["decision"], "deny", "{answers}");
                assert_eq!(won["reason"], format!("trial {k}"), "{answers}");
                false
            }
            _ => panic!("neither decision took effect: {answers}"),
        };
        approved.push(won_approve);
    }
    // The run did what the 200 said, call by call.
    let results = outcomes(&c, 0, &id);
    assert_eq!(results.len(), TRIALS, "{results:?}");
    let counts = c.counter.counts("r");
    for (k, approve) in approved.iter().enumerate() {
        let ran = counts.get(&format!("r{k}")).map_or(0, Vec::len);
        if *approve {
            assert!(results[k].contains(&format!("counted r{k}")), "{results:?}");
            assert_eq!(ran, 1, "call {k} was approved: {counts:?}");
        } else {
            assert!(results[k].contains(&format!("trial {k}")), "{results:?}");
            assert_eq!(ran, 0, "call {k} was denied: {counts:?}");
        }
    }
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_decision_after_the_deadline_gets_409_with_the_denial_and_the_run_says_denied() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "late1"}}]},
        {"text": "too late"},
    ]});
    let c = Cluster::start_with(&[("asklate", scenario)], &["--approval-timeout", "2"]);
    let id = submit(&c, "asklate");
    let approval = next_approval(&c, 1, &id, &[]);
    std::thread::sleep(Duration::from_secs(3));
    let (won, body) = approve_too_late(&c, 1, &id, &approval);
    assert_eq!(won["decision"], "deny", "{body}");
    assert_eq!(won["reason"], "nobody approved it within 2 s", "{body}");
    let results = outcomes(&c, 0, &id);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("nobody approved it within 2 s"),
        "{results:?}"
    );
    assert!(c.counter.counts("late").is_empty(), "the call never ran");
}

/// `PATCH` on the admin API's invocation `id` (`pause`, `resume`).
fn admin(c: &Cluster, id: &str, what: &str) {
    let url = format!("{}/invocations/{id}/{what}", c.restate.admin);
    let (status, body) = http("PATCH", &url, &[], None);
    assert!(
        (200..300).contains(&status),
        "{what}: HTTP {status}: {body}"
    );
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn the_pending_list_ends_at_the_deadline_while_no_worker_runs_the_run() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "idle1"}}]},
        {"text": "nobody came"},
    ]});
    let c = Cluster::start_with(&[("askidle", scenario)], &["--approval-timeout", "2"]);
    let id = submit(&c, "askidle");
    let approval = next_approval(&c, 1, &id, &[]);
    // No worker runs the run from here on (as when every worker is down): the deadline's
    // timer fires in Restate with nobody to act on it.
    admin(&c, &id, "pause");
    let end = Instant::now() + Duration::from_secs(10);
    while c.restate.status(&id) != "paused" {
        assert!(Instant::now() < end, "the run never paused");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(3));
    let now = ok_output(
        "status after the deadline",
        c.api(1, ALICE, "GET", &format!("/v1/runs/{id}"), &[], None),
    );
    assert_eq!(now["status"], "running", "{now}");
    assert!(now.get("approvals").is_none(), "{now}");
    // Deciding it now says it was denied, not that it was taken.
    let (won, body) = approve_too_late(&c, 0, &id, &approval);
    assert_eq!(won["decision"], "deny", "{body}");
    admin(&c, &id, "resume");
    let results = outcomes(&c, 1, &id);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("nobody approved it within 2 s"),
        "{results:?}"
    );
    assert!(c.counter.counts("idle").is_empty(), "the call never ran");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_decision_after_the_run_was_cancelled_gets_409() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "gone1"}}]},
        {"text": "never"},
    ]});
    let c = Cluster::start(&[("askgone", scenario)]);
    let id = submit(&c, "askgone");
    let approval = next_approval(&c, 1, &id, &[]);
    let cancel = format!("/v1/runs/{id}/cancel");
    ok_output("cancel", c.api(0, ALICE, "POST", &cancel, &[], None));
    let wait = format!("/v1/runs/{id}?wait=true");
    let done = ok_output("await", c.api(1, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "cancelled", "{done}");
    let (won, body) = approve_too_late(&c, 1, &id, &approval);
    assert_eq!(won["reason"], "the run was cancelled", "{body}");
    assert!(c.counter.counts("gone").is_empty(), "the call never ran");
}
