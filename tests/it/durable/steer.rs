//! Steering a durable run (`POST /v1/runs/{id}/input` through `kiln serve --restate-ingress`):
//! the message goes to the run's `KilnRun` workflow, reaches its next model request on the
//! worker running it, is in its journal (a worker killed after it replays it once, at the same
//! place), and a run that has ended, or was cancelled, refuses more; a session's turn takes a
//! message through its `KilnInbox`.

use super::fixtures::{ALICE, Cluster, ok_output};
use crate::agents::steer::user_texts;
use serde_json::{Value, json};

/// Two tool rounds (`{p}1`, `{p}2`), then an answer.
fn two_steps(p: &str) -> Value {
    let call =
        |s: &str| json!({"tool_calls": [{"name": "count", "args": {"step": format!("{p}{s}")}}]});
    json!({"require_auth": false, "turns": [call("1"), call("2"), {"text": "counted two"}]})
}

/// Starts agent `agent`'s run through worker B's front door (not waited for): its id.
fn start(c: &Cluster, agent: &str) -> String {
    let body = json!({"agent": agent, "input": "count", "wait": false});
    let sent = ok_output(
        "submit through B",
        c.api(1, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    sent["id"].as_str().expect("run id").to_string()
}

/// Starts a turn of session `session` of agent `talk` through worker B (not waited for): its
/// run id.
fn start_turn(c: &Cluster, session: &str) -> String {
    let body = json!({"agent": "talk", "input": "count", "session": session, "wait": false});
    let sent = ok_output(
        "session turn",
        c.api(1, ALICE, "POST", "/v1/runs", &[], Some(&body)),
    );
    sent["id"].as_str().expect("run id").to_string()
}

/// Run `id` awaited through worker B: it completed; the user texts of `talk`'s requests.
fn turn_ended(c: &Cluster, id: &str) -> Vec<Vec<String>> {
    let path = format!("/v1/runs/{id}?wait=true");
    let done = ok_output("the turn's end", c.api(1, ALICE, "GET", &path, &[], None));
    assert_eq!(done["status"], "completed", "{done}");
    let requests = c.mock("talk").requests();
    assert_eq!(requests.len(), 3, "no model request repeated: {requests:?}");
    requests.iter().map(user_texts).collect()
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_message_reaches_the_next_model_request_once_across_a_worker_kill() {
    let mut c = Cluster::start(&[("steer", two_steps("s"))]);
    // The first tool works (held at the counter) when the message comes.
    c.counter.hold_answering("s1");
    let id = start(&c, "steer");
    c.counter.wait_until("the first tool step", |s| s.holding);
    let input = format!("/v1/runs/{id}/input");
    let said = json!({"text": "add basil, please"});
    let (status, queued) = c.api(1, ALICE, "POST", &input, &[], Some(&said));
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["waiting"], 1, "{queued}");
    let (status, bad) = c.api(1, ALICE, "POST", &input, &[], Some(&json!({"text": " "})));
    assert_eq!(status, 400, "{bad}");

    // The second round's tool is held (then lost with its worker) once the message is taken.
    c.counter.hold("s2");
    c.counter.release();
    c.counter.wait_until("the second tool step", |s| s.holding);
    let journal = c.restate.journal(&id);
    let steps: Vec<&str> = journal
        .iter()
        .filter(|(t, n)| t == "Command: Run" && n != "tool-2-call_mock_1_0")
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(
        steps,
        ["model-1", "tool-1-call_mock_0_0", "steer-2", "model-2"],
        "the message is journaled before the second request: {journal:?}"
    );
    c.kill(0);
    c.counter.release();
    let done = ok_output(
        "await through B",
        c.api(
            1,
            ALICE,
            "GET",
            &format!("/v1/runs/{id}?wait=true"),
            &[],
            None,
        ),
    );
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["report"]["answer"], "counted two", "{done}");

    let requests = c.mock("steer").requests();
    assert_eq!(requests.len(), 3, "no model request repeated: {requests:?}");
    assert_eq!(user_texts(&requests[0]), ["count"]);
    assert_eq!(
        user_texts(&requests[1]),
        ["count", "add basil, please"],
        "the second request carries the message after the tool's result"
    );
    assert_eq!(
        user_texts(&requests[2]),
        ["count", "add basil, please"],
        "the replay carried it once, at the same place"
    );
    let said_in_report = done["report"]["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m.to_string().contains("add basil, please"))
                .count()
        })
        .unwrap_or_default();
    assert_eq!(said_in_report, 1, "{done}");
    let steers = c
        .restate
        .journal(&id)
        .iter()
        .filter(|(t, n)| t == "Command: Run" && n.starts_with("steer-"))
        .count();
    assert_eq!(steers, 1, "one steer step");
    // The run's events end with its report, the message in it.
    let (status, events) = c.api(1, ALICE, "GET", &format!("/v1/runs/{id}/events"), &[], None);
    let events = events.as_str().unwrap_or_default().to_string();
    assert_eq!(status, 200, "{events}");
    assert!(
        events.contains("event: end") && events.contains("add basil, please"),
        "{events}"
    );
    // The run has ended: nothing more reaches it.
    let late = json!({"text": "too late"});
    let (status, ended) = c.api(1, ALICE, "POST", &input, &[], Some(&late));
    assert_eq!(status, 409, "{ended}");
    assert_eq!(ended["error"]["code"], "run_ended", "{ended}");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_cancelled_durable_run_refuses_input_and_a_session_turn_takes_it_through_its_inbox() {
    let c = Cluster::start(&[("halt", two_steps("h")), ("talk", two_steps("t"))]);
    c.counter.hold_answering("h1");
    let id = start(&c, "halt");
    c.counter.wait_until("the first tool step", |s| s.holding);
    let cancel = format!("/v1/runs/{id}/cancel");
    let (status, body) = c.api(0, ALICE, "POST", &cancel, &[], None);
    assert_eq!(status, 202, "{body}");
    c.counter.release();
    let done = ok_output(
        "await",
        c.api(
            0,
            ALICE,
            "GET",
            &format!("/v1/runs/{id}?wait=true"),
            &[],
            None,
        ),
    );
    assert_eq!(done["status"], "cancelled", "{done}");
    let input = format!("/v1/runs/{id}/input");
    let said = json!({"text": "are you there?"});
    let (status, refused) = c.api(1, ALICE, "POST", &input, &[], Some(&said));
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["code"], "run_ended", "{refused}");
    // Straight at the workflow too (the front door's check aside): it was closed as it ended.
    let key = done_key(&c, &id);
    let url = format!("/KilnRun/{key}/input");
    let (status, body) = c.post(&url, None, &said);
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        c.mock("halt").requests().len(),
        1,
        "nothing after the cancel"
    );

    // A session's turn (a Virtual Object) takes one too, through its inbox.
    c.counter.hold_answering("t1");
    let turn = start_turn(&c, "s-1");
    c.counter
        .wait_until("the session's tool step", |s| s.holding);
    let input = format!("/v1/runs/{turn}/input");
    let (status, queued) = c.api(1, ALICE, "POST", &input, &[], Some(&said));
    assert_eq!((status, &queued["waiting"]), (202, &json!(1)), "{queued}");
    c.counter.release();
    let texts = turn_ended(&c, &turn);
    assert_eq!(
        texts[1],
        ["count", "are you there?"],
        "the next request carries it"
    );
    assert_eq!(texts[2], ["count", "are you there?"]);
    // The turn has ended: its inbox refuses more.
    let (status, ended) = c.api(1, ALICE, "POST", &input, &[], Some(&said));
    assert_eq!(status, 409, "{ended}");
    let (status, body) = c.post(&format!("/KilnInbox/{turn}/input"), None, &said);
    assert_eq!(status, 409, "{body}");
}

/// The workflow key of run `id` (its `KilnRun` key, as Restate lists it).
fn done_key(c: &Cluster, id: &str) -> String {
    let query = format!("SELECT target_service_key FROM sys_invocation WHERE id = '{id}'");
    let (_, body) = super::fixtures::http(
        "POST",
        &format!("{}/query", c.restate.admin),
        &[("accept", "application/json")],
        Some(&json!({ "query": query })),
    );
    let key = body["rows"][0]["target_service_key"]
        .as_str()
        .unwrap_or_else(|| panic!("no key for {id}: {body}"));
    kiln::durable::key_segment(key)
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_session_turn_takes_its_message_once_across_a_worker_kill() {
    let mut c = Cluster::start(&[("talk", two_steps("k"))]);
    c.counter.hold_answering("k1");
    let turn = start_turn(&c, "s-2");
    c.counter.wait_until("the first tool step", |s| s.holding);
    let input = format!("/v1/runs/{turn}/input");
    let said = json!({"text": "and the cellar, please"});
    let (status, queued) = c.api(1, ALICE, "POST", &input, &[], Some(&said));
    assert_eq!(status, 202, "{queued}");
    // The second round's tool is held, then lost with its worker, once the message is taken.
    c.counter.hold("k2");
    c.counter.release();
    c.counter.wait_until("the second tool step", |s| s.holding);
    c.kill(0);
    c.counter.release();
    let texts = turn_ended(&c, &turn);
    assert_eq!(texts[1], ["count", "and the cellar, please"]);
    assert_eq!(
        texts[2],
        ["count", "and the cellar, please"],
        "the replay took it once, at the same place"
    );
}
