//! MCP tasks across two `kiln serve` on one PostgreSQL database, without Restate (issue 62): a
//! task a stateless client started through A's `/mcp` is read through B's until it completes
//! there with its result, a task running on A is cancelled through B, and another client
//! finds neither. The real binary, a real PostgreSQL server (`KILN_POSTGRES`, `#[ignore]`d
//! without it).

use crate::common::*;
use crate::doors::serve::Serve;
use crate::mcp::mcp_stateless::{request, with_tasks};
use kiln_db::scratch::Scratch;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

const TASKS: &str = r#"
tool("slow").description("Answers after a while").param("topic", "string").task("optional")
    .handler(|args| { sleep(0.5); `report on ${args.topic}` });
tool("forever").description("Never ends on its own").task("required")
    .handler(|args| { sleep(60); "late" });
"#;

/// One 2026-07-28 request to `serve`'s `/mcp` as `client`, declaring the tasks extension.
fn mcp(serve: &Serve, client: &str, method: &str, params: Value) -> Value {
    let url = format!("{}/mcp", serve.url);
    let answer = request(&url, client, with_tasks(), "", method, params);
    assert_eq!(answer.status, 200, "{method}: {}", answer.message);
    answer.message
}

/// `method` on `task` by another client through `serve`: the error of a task that does not exist.
fn refused_to_another_client(serve: &Serve, method: &str, task: &str) {
    let url = format!("{}/mcp", serve.url);
    let theirs = request(
        &url,
        "someone-else",
        with_tasks(),
        "",
        method,
        json!({"taskId": task}),
    );
    assert_eq!(
        theirs.message["error"]["code"], -32602,
        "{method}: {}",
        theirs.message
    );
}

fn started(serve: &Serve, tool: &str, arguments: Value) -> String {
    let created = mcp(
        serve,
        "app",
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    );
    created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string()
}

/// `tasks/get` through `serve` until the task is no longer working.
fn settled(serve: &Serve, task: &str) -> Value {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let now = mcp(serve, "app", "tasks/get", json!({"taskId": task}));
        if now["result"]["status"] != "working" || Instant::now() > end {
            return now["result"].clone();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[ignore = "needs PostgreSQL: KILN_POSTGRES (.ci/postgres start)"]
fn postgres_an_mcp_task_started_on_one_server_is_read_and_cancelled_through_the_other() {
    let scratch = Scratch::new().expect("a PostgreSQL database");
    let scripts = Scripts::new(&[("tasks.rhai", TASKS)]);
    let start = || {
        Serve::start(
            scripts.path(),
            Path::new(scratch.url()),
            &["--no-stdlib"],
            &[],
        )
    };
    let (a, b) = (start(), start());

    let task = started(&a, "slow", json!({"topic": "tides"}));
    let seen = mcp(&b, "app", "tasks/get", json!({"taskId": task}));
    assert_eq!(
        seen["result"]["status"], "working",
        "B sees A's task: {seen}"
    );
    let done = settled(&b, &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "report on tides",
        "{done}"
    );
    // Another client learns nothing of it, through either server.
    for serve in [&a, &b] {
        refused_to_another_client(serve, "tasks/get", &task);
    }

    // Cancelled through B while it runs on A: A stops it, and both say so.
    let task = started(&a, "forever", json!({}));
    refused_to_another_client(&b, "tasks/cancel", &task);
    let ack = mcp(&b, "app", "tasks/cancel", json!({"taskId": task}));
    assert!(ack.get("result").is_some(), "{ack}");
    let on_a = settled(&a, &task);
    assert_eq!(on_a["status"], "cancelled", "{on_a}");
    let on_b = settled(&b, &task);
    assert_eq!(on_b["status"], "cancelled", "{on_b}");
}
