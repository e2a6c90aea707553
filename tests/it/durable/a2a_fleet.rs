//! The A2A door under Restate: on a fleet's front door a task is a `KilnSession` turn, so a
//! task whose worker dies is finished by another without repeating its completed steps, any
//! worker answers for it (to its actor only), and its `input-required` is a durable approval
//! decided through whichever worker the answer reaches.

use super::fixtures::{ALICE, BOB, Cluster, ok_output, three_steps};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A JSON-RPC call of `method` on agent `agent` through worker `i` as `token`: its reply.
fn rpc(c: &Cluster, i: usize, token: &str, agent: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let path = format!("/a2a/{agent}");
    ok_output(
        method,
        c.api(
            i,
            token,
            "POST",
            &path,
            &[("a2a-version", "1.0")],
            Some(&body),
        ),
    )
}

fn message(text: &str, task: Option<&Value>) -> Value {
    let mut m = json!({"messageId": format!("m-{text}-{:?}", Instant::now()), "role": "ROLE_USER",
        "parts": [{"text": text}]});
    if let Some(t) = task {
        m["taskId"] = t["id"].clone();
    }
    m
}

/// Task `id` through worker `i` once it is `state` (or after 60 s).
fn when(c: &Cluster, i: usize, agent: &str, id: &Value, state: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let got = rpc(c, i, ALICE, agent, "GetTask", json!({"id": id}));
        if got["result"]["status"]["state"] == state || Instant::now() > end {
            return got["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn durable_a2a_task_survives_its_worker_and_any_worker_answers_for_it() {
    let mut scenario = three_steps("t");
    if let Some(turns) = scenario["turns"].as_array_mut() {
        turns.push(json!({"text": "counted again"}));
    }
    let mut c = Cluster::start(&[("a2acount", scenario)]);
    // Through worker B's door; Restate runs it on A (the proxy's first choice): hold the
    // second tool step there and kill A.
    c.counter.hold("tb");
    let sent = rpc(
        &c,
        1,
        ALICE,
        "a2acount",
        "SendMessage",
        json!({
        "message": message("count", None), "configuration": {"returnImmediately": true}}),
    );
    let task = sent["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED", "{sent}");
    let id = task["id"].clone();
    assert!(id.as_str().is_some_and(|i| i.starts_with("inv_")), "{sent}");
    c.counter.wait_until("the second tool step", |s| s.holding);
    let working = when(&c, 1, "a2acount", &id, "TASK_STATE_WORKING");
    assert_eq!(
        working["status"]["state"], "TASK_STATE_WORKING",
        "{working}"
    );
    c.kill(0);
    c.counter.release();
    let done = when(&c, 1, "a2acount", &id, "TASK_STATE_COMPLETED");
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"], "counted three",
        "{done}"
    );
    assert_eq!(done["contextId"], task["contextId"], "{done}");
    assert_eq!(done["metadata"]["kilnRuns"][0], id, "{done}");
    // The completed step ran once; the one in flight again, under its one key.
    let counts = c.counter.counts("t");
    assert_eq!(counts["ta"].len(), 1, "{counts:?}");
    assert_eq!(counts["tb"].len(), 2, "{counts:?}");
    assert_eq!(counts["tb"][0], counts["tb"][1]);

    // A streamed send in the same context: the task, then its changes, to its end.
    let mut next = message("count again", None);
    next["contextId"] = task["contextId"].clone();
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage",
        "params": {"message": next}});
    let (status, streamed) = c.api(
        1,
        ALICE,
        "POST",
        "/a2a/a2acount",
        &[("a2a-version", "1.0")],
        Some(&body),
    );
    assert_eq!(status, 200, "{streamed}");
    let events: Vec<Value> = streamed
        .as_str()
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    assert!(
        events
            .first()
            .is_some_and(|e| e["result"]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"),
        "{streamed}"
    );
    assert_eq!(
        events
            .last()
            .map(|e| e["result"]["task"]["status"]["state"].clone()),
        Some(json!("TASK_STATE_COMPLETED")),
        "{streamed}"
    );

    // Another actor does not find it; what needs one process is refused, saying why.
    let theirs = rpc(&c, 1, BOB, "a2acount", "GetTask", json!({"id": id}));
    assert_eq!(theirs["error"]["code"], -32001, "{theirs}");
    let listed = rpc(&c, 1, ALICE, "a2acount", "ListTasks", json!({}));
    assert_eq!(listed["error"]["code"], -32004, "{listed}");
    assert!(
        listed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("fleet")),
        "{listed}"
    );
    let (status, card) = c.api(
        1,
        ALICE,
        "GET",
        "/a2a/a2acount/.well-known/agent-card.json",
        &[],
        None,
    );
    assert_eq!(status, 200, "{card}");
    assert_eq!(card["capabilities"]["pushNotifications"], false, "{card}");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn durable_a2a_input_required_is_an_approval_decided_through_any_worker() {
    let scenario = json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "count", "args": {"step": "q1"}}]},
        {"text": "approved and counted"},
    ]});
    let c = Cluster::start(&[("askcount", scenario)]);
    let sent = rpc(
        &c,
        0,
        ALICE,
        "askcount",
        "SendMessage",
        json!({"message": message("count", None)}),
    );
    let task = sent["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let asked = &task["status"]["message"]["parts"];
    assert_eq!(asked[1]["data"]["capability"], "net", "{sent}");
    assert!(
        c.counter.counts("q").is_empty(),
        "nothing ran before the approval"
    );

    // Not an answer: refused, the task still waits; then "yes" through the other worker.
    let wrong = rpc(
        &c,
        1,
        ALICE,
        "askcount",
        "SendMessage",
        json!({"message": message("maybe", Some(&task))}),
    );
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    let yes = rpc(
        &c,
        1,
        ALICE,
        "askcount",
        "SendMessage",
        json!({"message": message("yes", Some(&task))}),
    );
    let done = &yes["result"]["task"];
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{yes}");
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"], "approved and counted",
        "{yes}"
    );
    assert_eq!(c.counter.counts("q")["q1"].len(), 1);
    // The task is the run: /v1/runs knows it through any worker.
    let run = ok_output(
        "run",
        c.api(
            0,
            ALICE,
            "GET",
            &format!("/v1/runs/{}", task["id"].as_str().unwrap_or_default()),
            &[],
            None,
        ),
    );
    assert_eq!(run["status"], "completed", "{run}");
}
