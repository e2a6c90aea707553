//! The HTTP doors behave like a server on a network: header and body deadlines, a connection
//! cap, `Host`/`Origin` checks on `/v1/*`, busy-session waits in the queue, bounded MCP
//! sessions, and actors' sessions kept apart. The real binary on 127.0.0.1.

use crate::common::*;
use crate::common::{get, http, post};
use crate::doors::serve::Serve;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn addr(serve: &Serve) -> String {
    serve.url.trim_start_matches("http://").to_string()
}

/// Reads until the server closes the connection (or `limit` passes); returns what came and
/// how long it took.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (String, Duration) {
    let began = Instant::now();
    s.set_read_timeout(Some(limit)).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
        if began.elapsed() > limit {
            break;
        }
    }
    (String::from_utf8_lossy(&got).to_string(), began.elapsed())
}

fn plain_scripts() -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        r#"tool("nap").param("secs", "number").handler(|a| { sleep(a.secs); "rested" });
agent("napper").provider("script").tools(["nap"]).planner(|m, t| {
    let last = m[m.len() - 1];
    if last.role == "user" { #{ tool_calls: [#{ name: "nap", args: #{ secs: 2.0 } }] } } else { #{ text: "awake" } }
});
agent("quick").provider("script").planner(|m, t| #{ text: `heard ${m.len()}` });"#,
    )])
}

#[test]
fn slow_headers_slow_bodies_and_idle_connections_are_cut_and_connections_capped() {
    let s = plain_scripts();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &[
            "--header-timeout",
            "0.5",
            "--body-timeout",
            "0.5",
            "--max-connections",
            "3",
        ],
        &[],
    );
    // Partial headers: closed after the header deadline.
    let mut partial = TcpStream::connect(addr(&serve)).expect("connect");
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .expect("send");
    let (_, took) = read_until_closed(&mut partial, Duration::from_secs(10));
    assert!(
        took < Duration::from_secs(5),
        "partial headers held {took:?}"
    );
    // An idle connection that sends nothing: closed the same way.
    let mut idle = TcpStream::connect(addr(&serve)).expect("connect");
    let (_, took) = read_until_closed(&mut idle, Duration::from_secs(10));
    assert!(
        took < Duration::from_secs(5),
        "an idle connection held {took:?}"
    );
    // A body trickled a byte at a time: 408 once the body deadline passes.
    let mut trickle = TcpStream::connect(addr(&serve)).expect("connect");
    trickle
        .write_all(b"POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n")
        .expect("send");
    let began = Instant::now();
    let mut answer = String::new();
    for _ in 0..20 {
        if trickle.write_all(b" ").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        trickle
            .set_read_timeout(Some(Duration::from_millis(10)))
            .expect("t");
        let mut buf = [0u8; 1024];
        if let Ok(n) = trickle.read(&mut buf)
            && n > 0
        {
            answer = String::from_utf8_lossy(&buf[..n]).to_string();
            break;
        }
    }
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(began.elapsed() < Duration::from_secs(3));
    // The cap: three held connections, and a fourth is closed at once.
    let held: Vec<TcpStream> = (0..3)
        .map(|_| {
            let mut c = TcpStream::connect(addr(&serve)).expect("connect");
            c.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .expect("send");
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let mut fourth = TcpStream::connect(addr(&serve)).expect("the listener accepts");
    let _ = fourth.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    let (said, _) = read_until_closed(&mut fourth, Duration::from_secs(2));
    assert!(!said.contains("200 OK"), "over the cap yet served: {said}");
    drop(held);
    // Once they are gone, requests are served again.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(&format!("{}/healthz", serve.url)).0, 200);
}

#[test]
fn the_api_refuses_foreign_origins_and_hosts_as_mcp_does() {
    let s = plain_scripts();
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &[], &[]);
    let body = json!({"agent": "quick", "input": "hi"});
    let url = format!("{}/v1/runs", serve.url);
    let (status, err) = post(&url, &body, &[("origin", "http://evil.example")]);
    assert_eq!(status, 403, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("origin"),
        "{err}"
    );
    // A page of this server may (another port of this machine is another site).
    let own = format!(
        "http://localhost:{}",
        serve.url.rsplit(':').next().unwrap_or("")
    );
    let (status, _) = post(&url, &body, &[("origin", &own)]);
    assert_eq!(status, 200);
    let (status, _) = post(&url, &body, &[("origin", "http://localhost:3000")]);
    assert_eq!(status, 403);
    // DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends its own Host.
    let raw = |host: &str| {
        let mut c = TcpStream::connect(addr(&serve)).expect("connect");
        let text = body.to_string();
        write!(
            c,
            "POST /v1/runs HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        )
        .expect("send");
        read_until_closed(&mut c, Duration::from_secs(10)).0
    };
    assert!(raw("evil.example:8787").starts_with("HTTP/1.1 403"));
    assert!(raw("localhost:8787").starts_with("HTTP/1.1 200"));
    // Health probes are not guarded.
    let (status, _, _) = http(
        "GET",
        &format!("{}/healthz", serve.url),
        &[("origin", "http://evil.example")],
        None,
    );
    assert_eq!(status, 200);
}

#[test]
fn a_busy_sessions_next_request_waits_in_the_queue_and_times_out() {
    let s = plain_scripts();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--queue-timeout", "0.5"],
        &[],
    );
    let url = format!("{}/v1/runs", serve.url);
    let first = {
        let url = url.clone();
        std::thread::spawn(move || {
            post(
                &url,
                &json!({"agent": "napper", "input": "x", "session": "s"}),
                &[],
            )
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let waiting = {
        let url = url.clone();
        std::thread::spawn(move || {
            post(
                &url,
                &json!({"agent": "napper", "input": "y", "session": "s"}),
                &[],
            )
        })
    };
    std::thread::sleep(Duration::from_millis(150));
    let (_, ready) = get(&format!("{}/readyz", serve.url));
    assert_eq!(ready["queue_depth"], 1, "{ready}");
    let (status, err) = waiting.join().expect("join");
    assert_eq!(status, 503, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("session \"s\""),
        "{err}"
    );
    assert_eq!(first.join().expect("join").0, 200);
}

#[test]
fn actors_sessions_stay_apart_and_bad_session_names_are_refused() {
    let s = plain_scripts();
    let tokens = json!([
        {"token": "dave-token-0123456789", "actor": "dave"},
        {"token": "davex-token-0123456789", "actor": "dave/x"},
    ])
    .to_string();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &[],
        &[("KILN_TOKENS", &tokens)],
    );
    let url = format!("{}/v1/runs", serve.url);
    let dave = [("authorization", "Bearer dave-token-0123456789")];
    let davex = [("authorization", "Bearer davex-token-0123456789")];
    let (status, run) = post(
        &url,
        &json!({"agent": "quick", "input": "secret plan", "session": "x/notes"}),
        &dave,
    );
    assert_eq!(status, 200, "{run}");
    // The other actor's session "notes" is not dave's "x/notes".
    let (_, run) = post(
        &url,
        &json!({"agent": "quick", "input": "hello", "session": "notes"}),
        &davex,
    );
    assert_eq!(run["report"]["answer"], "heard 1", "{run}");
    let (status, _, text) = http(
        "GET",
        &format!("{}/v1/sessions/notes", serve.url),
        &davex,
        None,
    );
    assert_eq!(status, 200);
    assert!(!text.contains("secret plan"), "{text}");
    for name in [json!(""), json!("n".repeat(300)), json!("a\u{0}b")] {
        let (status, err) = post(
            &url,
            &json!({"agent": "quick", "input": "x", "session": name}),
            &dave,
        );
        assert_eq!(status, 400, "{name}: {err}");
        assert_eq!(err["error"]["param"], "session", "{err}");
    }
}

#[test]
fn mcp_http_sessions_are_bounded() {
    let s = plain_scripts();
    let mcp = crate::mcp::McpHttp::start(s.path(), &["--max-sessions", "2"], &[]);
    let url = mcp.url.clone();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let accept = [("accept", "application/json, text/event-stream")];
    let statuses: Vec<u16> = (0..3)
        .map(|_| http("POST", &url, &accept, Some(&init)).0)
        .collect();
    drop(mcp);
    assert_eq!(statuses, [200, 200, 503]);
}
