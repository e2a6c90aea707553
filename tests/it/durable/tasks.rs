//! MCP tasks under `kiln serve --restate`: a task is a `KilnCall` invocation, so a task
//! started through one worker's `/mcp` survives that worker, and another worker answers
//! `tasks/get` for it.

use super::fixtures::Cluster;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// One 2026-07-28 request to worker `i`'s `/mcp`, declaring the tasks extension; its answer.
fn mcp(c: &Cluster, i: usize, method: &str, _name: &str, params: Value) -> Value {
    mcp_as(c, i, "durable-test", method, _name, params)
}

/// [`mcp`] from the client called `client`.
fn mcp_as(c: &Cluster, i: usize, client: &str, method: &str, _name: &str, params: Value) -> Value {
    let url = format!("{}/mcp", c.apis[i]);
    let caps = crate::mcp::mcp_stateless::with_tasks();
    let answer = crate::mcp::mcp_stateless::request(&url, client, caps, "", method, params);
    assert_eq!(answer.status, 200, "{method}: {}", answer.message);
    answer.message
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn a_task_whose_worker_is_killed_is_finished_by_another_and_read_through_it() {
    let mut c = Cluster::start_open(&[], &["--caps", "net:127.0.0.1"]);
    c.counter.hold("t1");
    let created = mcp(
        &c,
        0,
        "tools/call",
        "count_task",
        json!({"name": "count_task", "arguments": {"step": "t1"}}),
    );
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert!(task.starts_with("inv_"), "a Restate invocation: {task}");
    c.counter
        .wait_until("the task's call to reach the counter", |s| s.holding);
    let get = |c: &Cluster, i: usize| {
        mcp(c, i, "tasks/get", &task, json!({"taskId": task}))["result"].clone()
    };
    assert_eq!(get(&c, 1)["status"], "working", "worker B sees the task");

    // Restate's calls reach A first (the proxy's order): kill it in the middle of the call.
    c.kill(0);
    c.counter.release();
    let end = Instant::now() + Duration::from_secs(60);
    let done = loop {
        let now = get(&c, 1);
        if now["status"] != "working" || Instant::now() > end {
            break now;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "counted t1 in a task",
        "{done}"
    );
    let counts = c.counter.counts("t1");
    let keys = &counts["t1"];
    assert_eq!(
        keys.len(),
        2,
        "the call in flight ran again on B: {counts:?}"
    );
    assert!(
        keys.iter().all(|k| *k == task),
        "every attempt sends the invocation's key: {counts:?}"
    );

    // Another client finds no such task; a finished one cancels as a no-op.
    let other = mcp_as(
        &c,
        1,
        "someone-else",
        "tasks/get",
        &task,
        json!({"taskId": task}),
    );
    assert_eq!(other["error"]["code"], -32602, "{other}");
    let cancel = mcp(&c, 1, "tasks/cancel", &task, json!({"taskId": task}));
    assert_eq!(cancel["result"]["resultType"], "complete", "{cancel}");
    let unknown = mcp(
        &c,
        1,
        "tasks/get",
        "inv_1nosuchtask",
        json!({"taskId": "inv_1nosuchtask"}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
}
