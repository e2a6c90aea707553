//! Deleted stays deleted (issue 56, item 8): `DELETE /v1/responses/{id}` while its run goes
//! on is not undone when the run ends, and continuing (`previous_response_id`) a response
//! still in progress is a `409`, not a conversation without its context. The real binary on
//! 127.0.0.1.

use crate::approvals::awaiting;
use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

fn scripts() -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        r#"tool("wipe").param("what", "string").handler(|a| `wiped ${a.what}`);
policy("careful").applies_to(["wipe"]).check(|c, ctx| ask("wiping is permanent"));
agent("wiper").provider("script").tools(["wipe"]).planner(|m, t| {
    let last = m[m.len() - 1];
    if last.role == "user" { #{ tool_calls: [#{ name: "wipe", args: #{ what: "all" } }] } } else { #{ text: "wiped" } }
});
agent("talker").provider("script").planner(|m, t| #{ text: `heard ${m.len()}` });"#,
    )])
}

/// Starts a streamed response and reads up to `response.created`: its id, and the stream
/// (kept open: a client that goes away cancels the run).
fn start_streamed(url: &str, body: &Value) -> (String, BufReader<std::net::TcpStream>) {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_once('/').expect("path");
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    let text = body.to_string();
    write!(
        s,
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    )
    .expect("send");
    let mut reader = BufReader::new(s);
    let mut line = String::new();
    while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
        if let Some(data) = line.trim().strip_prefix("data: ") {
            let event: Value = serde_json::from_str(data).unwrap_or_default();
            if event["type"] == "response.created" {
                let id = event["response"]["id"].as_str().unwrap_or("").to_string();
                return (id, reader);
            }
        }
        line.clear();
    }
    panic!("the stream ended before response.created");
}

#[test]
fn a_response_deleted_while_it_runs_stays_deleted_and_one_in_progress_is_not_continued() {
    let s = scripts();
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    let url = format!("{}/v1/responses", serve.url);
    let (id, mut stream) = start_streamed(
        &url,
        &json!({"model": "wiper", "input": "go", "stream": true}),
    );
    let run = id
        .strip_prefix("resp_")
        .expect("resp_ + the run id")
        .to_string();
    let approval = awaiting(&serve, &run);
    assert_eq!(get(&format!("{url}/{id}")).1["status"], "in_progress");

    // Continuing it now would continue an empty conversation: refused, saying why.
    let (status, e) = post(
        &url,
        &json!({"model": "wiper", "input": "and more", "previous_response_id": id}),
        &[],
    );
    assert_eq!(status, 409, "{e}");
    assert_eq!(e["error"]["code"], "previous_response_in_progress", "{e}");
    assert_eq!(e["error"]["param"], "previous_response_id", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("still in progress"),
        "{e}"
    );

    // Deleted while it runs; the run goes on and ends.
    let (status, _, body) = http("DELETE", &format!("{url}/{id}"), &[], None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(get(&format!("{url}/{id}")).0, 404);
    let decide = format!(
        "{}/v1/runs/{run}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or("")
    );
    assert_eq!(post(&decide, &json!({"decision": "approve"}), &[]).0, 200);
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut rest);
    assert!(rest.contains("response.completed"), "{rest}");
    let done = get(&format!("{}/v1/runs/{run}?wait=true", serve.url)).1;
    assert_eq!(done["status"], "completed", "{done}");
    // Its end is not stored back: it stays deleted.
    let until = Instant::now() + Duration::from_millis(1500);
    while Instant::now() < until {
        let (status, r) = get(&format!("{url}/{id}"));
        assert_eq!(status, 404, "deleted, then saved again: {r}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, e) = post(
        &url,
        &json!({"model": "talker", "input": "and more", "previous_response_id": id}),
        &[],
    );
    assert_eq!(status, 404, "{e}");
    assert_eq!(e["error"]["code"], "previous_response_not_found", "{e}");

    // A response that has ended is continued with its whole conversation.
    let (status, first) = post(&url, &json!({"model": "talker", "input": "hi"}), &[]);
    assert_eq!(status, 200, "{first}");
    let (status, next) = post(
        &url,
        &json!({"model": "talker", "input": "again", "previous_response_id": first["id"]}),
        &[],
    );
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["output"][0]["content"][0]["text"], "heard 3", "{next}");
}
