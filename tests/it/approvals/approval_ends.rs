//! A run that waits for a person ends its wait when the run ends another way, at every door
//! of `kiln serve`: `POST /v1/responses/{id}/cancel`, a Responses stream whose client goes
//! away, and `--run-timeout`. Each time the approval leaves the inbox, a later decision gets
//! 409 naming how the run ended, the tool never runs, and the run's slot is free again.

use crate::approvals::{awaiting, finished};
use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

/// `remember` needs the `store` grant, which `notes` holds only with a person's approval.
fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        &format!(
            r#"tool("remember").description("Keeps a note").param("text", "string").requires(["store"])
    .handler(|a| {{ store_set("notes", "last", a.text); `kept ${{a.text}}` }});
agent("notes").provider("openai").model("m").base_url("{}/v1").tools(["remember"]).ask(["store"]);"#,
            mock.url
        ),
    )])
}

/// A model that calls `remember` at each request (a run that ends waiting asks nothing more).
fn mock() -> Mock {
    let call = json!({"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]});
    Mock::start(&json!({"require_auth": false, "turns": [call, call, call, call]}))
}

fn serve(s: &Scripts, args: &[&str]) -> Serve {
    let mut all = vec!["--no-stdlib", "--max-runs", "1"];
    all.extend_from_slice(args);
    Serve::start(s.path(), &s.path().join("k.db"), &all, &[])
}

/// The id of the one run waiting for approval, once there is one, and its approval's id.
fn the_waiting_run(serve: &Serve) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let (_, listed) = get(&format!("{}/v1/runs", serve.url));
        let runs = listed["runs"].as_array().cloned().unwrap_or_default();
        if let Some(run) = runs.iter().find(|r| r["status"] == "awaiting_approval") {
            let id = run["id"].as_str().unwrap_or_default().to_string();
            let approval = awaiting(serve, &id)["id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            return (id, approval);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no run waited for approval");
}

/// `f` on a thread of its own: its answer, or `None` when it took longer than `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).ok()
}

/// After the run ended as `how`: the inbox is empty, a decision is a 409 naming `how`, the
/// tool never ran, and the one slot takes the next run (which waits for approval in turn).
fn assert_ended_for_good(serve: &Serve, id: &str, approval: &str, how: &str) {
    let done = finished(serve, id);
    let (_, inbox) = get(&format!("{}/v1/approvals", serve.url));
    assert_eq!(inbox["approvals"], json!([]), "{inbox}");
    let url = format!("{}/v1/runs/{id}/approvals/{approval}", serve.url);
    let (status, said) = post(&url, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 409, "{said}");
    assert!(said.to_string().contains(how), "{how}: {said}");
    assert!(!done.to_string().contains("kept milk"), "{done}");
    let body = json!({"agent": "notes", "input": "again", "wait": false});
    let (status, next) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    assert!((200..300).contains(&status), "the slot is free: {next}");
    awaiting(serve, next["id"].as_str().unwrap_or_default());
}

#[test]
fn cancelling_a_response_that_waits_for_approval_answers_at_once() {
    let mock = mock();
    let s = scripts(&mock);
    let serve = serve(&s, &[]);
    let url = format!("{}/v1/responses", serve.url);
    let asked =
        std::thread::spawn(move || post(&url, &json!({"model": "notes", "input": "go"}), &[]));
    let (id, approval) = the_waiting_run(&serve);
    let cancel = format!("{}/v1/responses/resp_{id}/cancel", serve.url);
    let (status, response) =
        within(10, move || post(&cancel, &json!({}), &[])).expect("the cancel answers");
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["status"], "cancelled", "{response}");
    let (_, first) = within(10, move || asked.join().ok())
        .flatten()
        .expect("the request ends");
    assert_eq!(first["status"], "cancelled", "{first}");
    assert_ended_for_good(&serve, &id, &approval, "cancelled");
}

#[test]
fn a_responses_client_that_leaves_ends_the_wait() {
    let mock = mock();
    let s = scripts(&mock);
    let serve = serve(&s, &[]);
    let host = serve.url.trim_start_matches("http://").to_string();
    let mut conn = std::net::TcpStream::connect(&host).expect("connect");
    let body = json!({"model": "notes", "input": "go", "stream": true}).to_string();
    let head = format!(
        "POST /v1/responses HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(head.as_bytes()).expect("send");
    let mut lines = BufReader::new(conn.try_clone().expect("clone"));
    let mut line = String::new();
    while !line.contains("mcp_approval_request") {
        line.clear();
        let read = lines.read_line(&mut line).expect("read the stream");
        assert!(read > 0, "the stream ended before the approval was asked");
    }
    let (id, approval) = the_waiting_run(&serve);
    // The client goes away mid-stream.
    let _ = conn.shutdown(std::net::Shutdown::Both);
    drop((conn, lines));
    let began = Instant::now();
    let done = finished(&serve, &id);
    assert_eq!(done["status"], "cancelled", "{done}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert_ended_for_good(&serve, &id, &approval, "cancelled");
}

#[test]
fn the_run_timeout_ends_a_wait_for_approval() {
    let mock = mock();
    let s = scripts(&mock);
    let serve = serve(&s, &["--run-timeout", "3", "--approval-timeout", "60"]);
    let body = json!({"agent": "notes", "input": "go", "wait": false});
    let (_, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
    let id = run["id"].as_str().unwrap_or_default().to_string();
    let approval = awaiting(&serve, &id)["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let began = Instant::now();
    let done = finished(&serve, &id);
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(done["status"], "failed", "{done}");
    assert_ended_for_good(&serve, &id, &approval, "deadline");
}

/// The same through the Responses door: its response ends failed at the deadline.
#[test]
fn the_run_timeout_ends_a_responses_wait_for_approval() {
    let mock = mock();
    let s = scripts(&mock);
    let serve = serve(&s, &["--run-timeout", "3", "--approval-timeout", "60"]);
    let url = format!("{}/v1/responses", serve.url);
    let asked =
        std::thread::spawn(move || post(&url, &json!({"model": "notes", "input": "go"}), &[]));
    let (id, approval) = the_waiting_run(&serve);
    let (_, response): (u16, Value) = within(10, move || asked.join().ok())
        .flatten()
        .expect("the request ends");
    assert_eq!(response["status"], "failed", "{response}");
    assert_ended_for_good(&serve, &id, &approval, "deadline");
}
