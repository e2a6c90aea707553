//! Approvals in durable runs: a call needing approval waits as a durable promise (a Restate
//! awakeable), so the run waits without its worker, survives the worker being killed, and is
//! approved through another worker; nobody deciding in time denies.

use super::fixtures::{ALICE, BOB, Cluster, http, ok_output, three_steps};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Polls the run through worker `i` until it waits for an approval; that status.
fn awaiting(c: &Cluster, i: usize, id: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let now = ok_output(
            "status",
            c.api(i, ALICE, "GET", &format!("/v1/runs/{id}"), &[], None),
        );
        if now["status"] == "awaiting_approval" || Instant::now() > end {
            return now;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_run_waiting_for_approval_survives_its_worker_and_is_approved_through_another() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "q1"}}]},
        {"text": "approved and counted"},
    ]});
    let mut c = Cluster::start(&[("askcount", scenario)]);
    let body = json!({"agent": "askcount", "input": "count", "wait": false});
    let sent = ok_output(
        "submit through A",
        c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    let id = sent["id"].as_str().expect("run id").to_string();
    let waiting = awaiting(&c, 1, &id);
    assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
    let approval = &waiting["approvals"][0];
    assert_eq!(approval["capability"], "net", "{waiting}");
    let question = approval["question"].as_str().unwrap_or_default();
    assert!(
        question.contains("tool \"count\"") && question.contains("q1"),
        "{waiting}"
    );
    let approval_id = approval["id"].as_str().expect("approval id").to_string();
    assert!(
        c.counter.counts("q").is_empty(),
        "nothing ran before the approval"
    );
    // The console's inbox lists it, through any worker, for its actor only.
    let inbox = ok_output("inbox", c.api(1, ALICE, "GET", "/v1/approvals", &[], None));
    let listed = &inbox["approvals"][0];
    assert_eq!(
        (&listed["run"], &listed["id"], &listed["capability"]),
        (&json!(id), &json!(approval_id), &json!("net")),
        "{inbox}"
    );
    assert!(listed["expires_at"].as_f64().is_some(), "{inbox}");
    let theirs = ok_output(
        "bob's inbox",
        c.api(1, BOB, "GET", "/v1/approvals", &[], None),
    );
    assert_eq!(theirs, json!({"approvals": []}));

    // The worker running it dies while it waits; the wait goes on in Restate.
    c.kill(0);
    let still = awaiting(&c, 1, &id);
    assert_eq!(
        still["approvals"][0]["id"],
        approval_id.as_str(),
        "the same promise: {still}"
    );
    let path = format!("/v1/runs/{id}/approvals/{approval_id}");
    let approve = json!({"decision": "approve"});
    // Another actor cannot decide it; a made-up approval is not there.
    let (status, body) = c.api(1, BOB, "POST", &path, &[], Some(&approve));
    assert_eq!(status, 404, "{body}");
    let wrong = format!("/v1/runs/{id}/approvals/sign_1nosuchpromise");
    let (status, body) = c.api(1, ALICE, "POST", &wrong, &[], Some(&approve));
    assert_eq!(status, 404, "{body}");
    ok_output(
        "approve through B",
        c.api(1, ALICE, "POST", &path, &[], Some(&approve)),
    );

    let wait = format!("/v1/runs/{id}?wait=true");
    let done = ok_output("await through B", c.api(1, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["report"]["answer"], "approved and counted", "{done}");
    assert_eq!(
        done["report"]["tool_calls"][0]["outcome"]["result"], "counted q1 (#1)",
        "{done}"
    );
    let counts = c.counter.counts("q");
    assert_eq!(
        counts.get("q1").map(Vec::len),
        Some(1),
        "the call ran once: {counts:?}"
    );
    assert_eq!(
        c.mock("askcount").requests().len(),
        2,
        "no model request repeated"
    );
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_durable_approval_nobody_decides_in_time_is_denied_and_a_denial_reaches_the_model() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "d1"}}]},
        {"tool_calls": [{"name": "count", "args": {"step": "d2"}}]},
        {"text": "gave up"},
    ]});
    // One run slot per worker (Restate's calls reach worker A first).
    let more = ["--approval-timeout", "3", "--max-runs", "1"];
    let c = Cluster::start_with(&[("askdeny", scenario), ("free", three_steps("f"))], &more);
    let body = json!({"agent": "askdeny", "input": "count", "wait": false});
    let sent = ok_output(
        "submit",
        c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    let id = sent["id"].as_str().expect("run id").to_string();
    let waiting = awaiting(&c, 1, &id);
    // While it waits it holds no slot: another run goes through the same worker meanwhile.
    let free = json!({"agent": "free", "input": "count"});
    let other = ok_output(
        "a run meanwhile",
        c.api(0, ALICE, "POST", "/v1/runs", &[], Some(&free)),
    );
    assert_eq!(other["status"], "completed", "{other}");
    let still = ok_output(
        "status",
        c.api(1, ALICE, "GET", &format!("/v1/runs/{id}"), &[], None),
    );
    assert_eq!(still["status"], "awaiting_approval", "{still}");
    // The first call is denied by a person, with a reason; the second by the deadline.
    let approval_id = waiting["approvals"][0]["id"]
        .as_str()
        .expect("approval")
        .to_string();
    let deny = json!({"decision": "deny", "reason": "not today"});
    let path = format!("/v1/runs/{id}/approvals/{approval_id}");
    ok_output("deny", c.api(1, ALICE, "POST", &path, &[], Some(&deny)));
    let wait = format!("/v1/runs/{id}?wait=true");
    let done = ok_output("await", c.api(0, ALICE, "GET", &wait, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    let results: Vec<String> = done["report"]["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["outcome"].to_string())
        .collect();
    assert_eq!(results.len(), 2, "{done}");
    assert!(results[0].contains("not today"), "{results:?}");
    assert!(
        results[1].contains("nobody approved it within 3 s"),
        "{results:?}"
    );
    assert!(c.counter.counts("d").is_empty(), "neither call ran");
}

/// The seeds' flagship case under `--restate`: a capability the tool declares as its own
/// (`vault`, no host function behind it) under the agent's `.ask(["vault"])`. The durable run
/// waits for the approval before the tool's step; an approval runs it once, a denial is the
/// call's error and the handler never runs.
#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_durable_run_waits_for_a_tools_own_ask_capability_before_the_handler() {
    let call = json!({"tool_calls": [{"name": "vault_read", "args": {"key": "k"}}]});
    let scenario = |answer: &str| json!({"require_auth": false, "turns": [call, {"text": answer}]});
    // Without tokens: the tokens' ceiling (net:127.0.0.1) would refuse `vault` outright.
    let c = Cluster::start_open(
        &[
            ("vault_yes", scenario("read it")),
            ("vault_no", scenario("it was refused")),
        ],
        &[],
    );
    for (agent, decision, runs) in [("vault_yes", "approve", true), ("vault_no", "deny", false)] {
        let api = |i: usize, method: &str, path: &str, body: Option<&Value>| {
            http(method, &format!("{}{path}", c.apis[i]), &[], body)
        };
        let body = json!({"agent": agent, "input": "read the secret", "wait": false});
        let sent = ok_output("submit", api(0, "POST", "/v1/runs", Some(&body)));
        let id = sent["id"].as_str().expect("run id").to_string();
        let end = Instant::now() + Duration::from_secs(30);
        let waiting = loop {
            let now = ok_output("status", api(1, "GET", &format!("/v1/runs/{id}"), None));
            if now["status"] == "awaiting_approval" || Instant::now() > end {
                break now;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
        let approval = &waiting["approvals"][0];
        assert_eq!(approval["capability"], "vault", "{waiting}");
        assert!(
            approval["question"]
                .as_str()
                .unwrap_or_default()
                .contains("tool \"vault_read\" may use vault only when a person approves"),
            "{waiting}"
        );
        assert!(!waiting.to_string().contains("VAULT-SECRET"), "{waiting}");
        let path = format!(
            "/v1/runs/{id}/approvals/{}",
            approval["id"].as_str().expect("approval id")
        );
        let decide = json!({"decision": decision});
        ok_output("decide", api(1, "POST", &path, Some(&decide)));
        let wait = format!("/v1/runs/{id}?wait=true");
        let done = ok_output("await", api(0, "GET", &wait, None));
        assert_eq!(done["status"], "completed", "{done}");
        let calls = done["report"]["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(calls.len(), 1, "one call: {done}");
        let outcome = &calls[0]["outcome"];
        if runs {
            assert_eq!(outcome["result"], "VAULT-SECRET", "{done}");
            assert_eq!(done["report"]["answer"], "read it", "{done}");
        } else {
            assert!(!done.to_string().contains("VAULT-SECRET"), "ran: {done}");
            assert!(
                outcome["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("\"vault\" needs approval"),
                "{done}"
            );
            assert_eq!(done["report"]["answer"], "it was refused", "{done}");
        }
        assert_eq!(
            c.mock(agent).requests().len(),
            2,
            "no model request repeated"
        );
    }
}
