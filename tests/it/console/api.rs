//! The web console's API on the real `kiln serve` (the browser suite drives the pages in
//! console_browser.rs): the inbox shows exactly the approvals a token may decide, the feed
//! and the run list keep actors apart, a run's timeline tells its story, tools are called
//! through the same walls, load errors show at file:line:col, and the pages carry their
//! Content-Security-Policy while a cross-site form changes nothing (console_pages.rs).

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};

pub(crate) const ALICE: &str = "alice-console-token-0001";
const BOB: &str = "bob-console-token-000002";
const CAROL: &str = "carol-approver-token-003";

pub(crate) fn tokens() -> String {
    json!([
        {"token": ALICE, "actor": "alice", "caps": ["store", "fs.write"]},
        {"token": BOB, "actor": "bob", "caps": ["store"]},
        {"token": CAROL, "actor": "carol", "caps": ["approve"]},
    ])
    .to_string()
}

fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        &format!(
            r#"tool("remember").description("Keeps a note").param("text", "string").requires(["store"])
    .handler(|a| {{ store_set("notes", "last", a.text); `kept ${{a.text}}` }});
tool("order").description("Places an order")
    .input_schema(#{{ type: "object", required: ["items"], properties: #{{
        items: #{{ type: "array", items: #{{ type: "object", required: ["qty"], properties: #{{
            qty: #{{ type: "integer", minimum: 1 }}, size: #{{ type: "string", enum: ["S", "M"] }} }} }} }} }} }})
    .handler(|a| `ordered ${{a.items.len()}}`);
agent("notes").provider("openai").model("m").base_url("{}/v1").tools(["remember"]).needs_approval(["store"]);"#,
            mock.url
        ),
    )])
}

/// Polls `GET /v1/approvals` as `token` until it lists one.
fn inbox_item(serve: &Serve, token: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let (status, inbox) =
            with_token("GET", &format!("{}/v1/approvals", serve.url), token, None);
        assert_eq!(status, 200, "{inbox}");
        if let Some(first) = inbox["approvals"].get(0) {
            return first.clone();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no approval reached the inbox");
}

/// Reads SSE events of `GET /v1/events` as `token` on a thread; their names and data.
fn listen(serve: &Serve, token: &str) -> std::sync::mpsc::Receiver<(String, Value)> {
    let host = serve.url.trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&host).expect("connect");
    write!(
        s,
        "GET /v1/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\r\n"
    )
    .expect("send");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut name = String::new();
        for line in BufReader::new(s).lines().map_while(Result::ok) {
            if let Some(n) = line.strip_prefix("event: ") {
                name = n.to_string();
            } else if let Some(data) = line.strip_prefix("data: ") {
                let data = serde_json::from_str(data).unwrap_or(Value::Null);
                if tx.send((name.clone(), data)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The events received within `wait`.
fn drain(rx: &std::sync::mpsc::Receiver<(String, Value)>, wait: Duration) -> Vec<(String, Value)> {
    let deadline = Instant::now() + wait;
    let mut got = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(ev) => got.push(ev),
            Err(_) => break,
        }
    }
    got
}

#[test]
fn the_inbox_shows_a_token_exactly_the_approvals_it_may_decide_and_nothing_else() {
    let call = json!({"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]});
    let mock = Mock::start(&json!({"require_auth": false, "turns": [call, {"text": "kept it"}]}));
    let s = scripts(&mock);
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib"],
        &[("KILN_TOKENS", &tokens())],
    );
    let (alice_feed, bob_feed, carol_feed) = (
        listen(&serve, ALICE),
        listen(&serve, BOB),
        listen(&serve, CAROL),
    );
    std::thread::sleep(Duration::from_millis(200));
    let body = json!({"agent": "notes", "input": "remember milk", "wait": false});
    let id = start_run_as(&serve.url, ALICE, &body);

    // Alice and Carol (granted `approve`) see the approval with its tool and arguments.
    let mine = inbox_item(&serve, ALICE);
    let theirs = inbox_item(&serve, CAROL);
    assert_eq!(mine, theirs);
    assert_eq!(
        (
            &mine["run"],
            &mine["tool"],
            &mine["args"],
            &mine["capability"]
        ),
        (
            &json!(id),
            &json!("remember"),
            &json!({"text": "milk"}),
            &json!("store")
        ),
        "{mine}"
    );
    let waited =
        mine["expires_at"].as_f64().unwrap_or(0.0) - mine["asked_at"].as_f64().unwrap_or(0.0);
    assert!(waited > 1.0, "a deadline after the question: {mine}");
    // Bob sees none of it; Carol sees nothing of the run but the approval.
    let (_, bobs) = with_token("GET", &format!("{}/v1/approvals", serve.url), BOB, None);
    assert_eq!(bobs, json!({"approvals": []}));
    for token in [BOB, CAROL] {
        for path in [format!("/v1/runs/{id}"), format!("/v1/runs/{id}/timeline")] {
            let (status, body) = with_token("GET", &format!("{}{path}", serve.url), token, None);
            assert_eq!(status, 404, "{path}: {body}");
        }
        let (_, runs) = with_token("GET", &format!("{}/v1/runs", serve.url), token, None);
        assert_eq!(runs, json!({"runs": []}), "{token}");
    }
    let (_, runs) = with_token("GET", &format!("{}/v1/runs", serve.url), ALICE, None);
    assert_eq!(runs["runs"][0]["status"], "awaiting_approval", "{runs}");
    assert_eq!(runs["runs"][0]["waiting"], 1, "{runs}");

    // Carol decides; the run finishes; Alice's timeline tells the story.
    let decide = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        mine["id"].as_str().unwrap_or("")
    );
    let (status, body) = with_token(
        "POST",
        &decide,
        CAROL,
        Some(&json!({"decision": "approve"})),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"id": id, "agent": null, "status": "running"}),
        "an approver learns nothing of another actor's run"
    );
    let (_, done) = with_token(
        "GET",
        &format!("{}/v1/runs/{id}?wait=true", serve.url),
        ALICE,
        None,
    );
    assert_eq!(done["status"], "completed", "{done}");
    let (status, story) = with_token(
        "GET",
        &format!("{}/v1/runs/{id}/timeline", serve.url),
        ALICE,
        None,
    );
    assert_eq!(status, 200, "{story}");
    assert_eq!(story["status"], "completed", "{story}");
    let first = &story["rounds"][0];
    assert_eq!(
        (first["round"].as_i64(), first["model"].as_str()),
        (Some(1), Some("m")),
        "{story}"
    );
    assert!(first["duration_ms"].as_f64().is_some(), "{story}");
    let call = &first["tool_calls"][0];
    assert_eq!(
        (&call["name"], &call["args"], &call["result"]),
        (
            &json!("remember"),
            &json!({"text": "milk"}),
            &json!("kept milk")
        ),
        "{story}"
    );
    assert_eq!(
        story["approvals"][0]["decision"],
        json!({"decision": "approve"}),
        "{story}"
    );
    assert_eq!(
        story["approvals"][0]["args"],
        json!({"text": "milk"}),
        "{story}"
    );
    assert_eq!(story["answer"], "kept it", "{story}");

    // The feed: Alice heard her run start, ask, get decided and end; Carol the approval
    // only; Bob nothing.
    let names = |evs: Vec<(String, Value)>| evs.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    // Everything up to the run's end (under load the feed may lag the API's answers).
    let alice_events = drain_through(&alice_feed, "run_ended");
    let asked = alice_events.iter().find(|(n, _)| n == "approval_requested");
    assert_eq!(
        asked.map(|(_, a)| (&a["tool"], &a["args"])),
        Some((&json!("remember"), &json!({"text": "milk"}))),
        "the feed's approval names its call: {alice_events:?}"
    );
    let alice_heard = names(alice_events);
    assert_eq!(
        alice_heard,
        [
            "run_started",
            "approval_requested",
            "approval_decided",
            "run_ended"
        ],
        "alice"
    );
    assert_eq!(
        names(drain(&carol_feed, Duration::from_millis(500))),
        ["approval_requested", "approval_decided"]
    );
    assert!(
        drain(&bob_feed, Duration::from_millis(100)).is_empty(),
        "bob heard of alice's run"
    );
}

/// Scripts with a tool that writes a file (its `fs.write` asks a person when the server marks
/// it so) and one with a nested schema.
pub(crate) fn tool_scripts() -> Scripts {
    Scripts::new(&[(
        "tools.rhai",
        r#"tool("save").description("Saves a note to a file").param("path", "string").param("text", "string")
    .requires(["fs.write"]).handler(|a| { write_file(a.path, a.text); `saved ${a.path}` });
tool("order").description("Places an order")
    .input_schema(#{ type: "object", required: ["items"], properties: #{
        items: #{ type: "array", items: #{ type: "object", required: ["qty"], properties: #{
            qty: #{ type: "integer", minimum: 1 }, size: #{ type: "string", enum: ["S", "M"] } } } } } })
    .handler(|a| `ordered ${a.items.len()}`);"#,
    )])
}

#[test]
fn a_tool_called_from_the_console_keeps_validation_the_guard_approvals_and_the_run_log() {
    let s = tool_scripts();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &[
            "--no-stdlib",
            "--caps",
            "fs.write",
            "--needs-approval",
            "fs.write",
        ],
        &[("KILN_TOKENS", &tokens())],
    );
    let (status, list) = with_token("GET", &format!("{}/v1/tools", serve.url), BOB, None);
    assert_eq!(status, 200, "{list}");
    let save = list["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "save"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(save["capabilities"], json!(["fs.write"]), "{list}");
    assert_eq!(
        save["available"], false,
        "bob's token holds no fs.write: {list}"
    );
    assert_eq!(
        save["schema"]["required"],
        json!(["path", "text"]),
        "{list}"
    );

    // A bad value is refused at its path, with every violation named.
    let order = format!("{}/v1/tools/order", serve.url);
    let bad = json!({"arguments": {"items": [{"qty": 2}, {"qty": 0, "size": "XL"}]}});
    let (status, refused) = with_token("POST", &order, ALICE, Some(&bad));
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_arguments", "{refused}");
    let mut paths: Vec<&str> = refused["error"]["fields"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["path"].as_str()).collect())
        .unwrap_or_default();
    paths.sort_unstable();
    assert_eq!(paths, ["/items/1/qty", "/items/1/size"], "{refused}");
    let good = json!({"arguments": {"items": [{"qty": 2, "size": "M"}]}});
    let (status, done) = with_token("POST", &order, ALICE, Some(&good));
    assert_eq!(
        (status, &done["result"]),
        (200, &json!("ordered 1")),
        "{done}"
    );

    // Bob's token cannot write: the guard refuses before anything runs.
    let save_url = format!("{}/v1/tools/save", serve.url);
    let note = json!({"arguments": {"path": "note.txt", "text": "hi"}});
    let (status, refused) = with_token("POST", &save_url, BOB, Some(&note));
    assert_eq!(
        (status, &refused["error"]["kind"]),
        (200, &json!("capability")),
        "{refused}"
    );

    // Alice's write waits in the inbox; denied with a reason, nothing is written.
    let (url, token, denied_note) = (save_url.clone(), ALICE, note.clone());
    let waiting = std::thread::spawn(move || with_token("POST", &url, token, Some(&denied_note)));
    let asked = inbox_item(&serve, ALICE);
    assert_eq!(
        (&asked["tool"], &asked["args"], &asked["capability"]),
        (
            &json!("save"),
            &json!({"path": "note.txt", "text": "hi"}),
            &json!("fs.write")
        ),
        "{asked}"
    );
    let decide = format!(
        "{}/v1/runs/{}/approvals/{}",
        serve.url,
        asked["run"].as_str().unwrap_or(""),
        asked["id"].as_str().unwrap_or("")
    );
    let deny = json!({"decision": "deny", "reason": "not on Fridays"});
    let (status, body) = with_token("POST", &decide, ALICE, Some(&deny));
    assert_eq!(status, 200, "{body}");
    let (status, answer) = waiting.join().expect("the call answered");
    assert_eq!(status, 200, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("not on Fridays"), "{answer}");
    assert!(!s.path().join("note.txt").exists(), "a denied write wrote");

    // Approved, it writes; the run log has both calls, under alice.
    let (url, token) = (save_url.clone(), ALICE);
    let waiting = std::thread::spawn(move || with_token("POST", &url, token, Some(&note)));
    let asked = inbox_item(&serve, ALICE);
    let decide = format!(
        "{}/v1/runs/{}/approvals/{}",
        serve.url,
        asked["run"].as_str().unwrap_or(""),
        asked["id"].as_str().unwrap_or("")
    );
    with_token(
        "POST",
        &decide,
        ALICE,
        Some(&json!({"decision": "approve"})),
    );
    let (_, answer) = waiting.join().expect("the call answered");
    assert_eq!(answer["result"], "saved note.txt", "{answer}");
    assert_eq!(
        std::fs::read_to_string(s.path().join("note.txt"))
            .ok()
            .as_deref(),
        Some("hi")
    );
    let (_, runs) = with_token(
        "GET",
        &format!("{}/v1/runs?agent=call:save", serve.url),
        ALICE,
        None,
    );
    let statuses: Vec<&str> = runs["runs"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["status"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(statuses, ["completed", "failed"], "{runs}");
    let failed = format!("{}/v1/runs?status=failed&limit=1", serve.url);
    let (_, only) = with_token("GET", &failed, ALICE, None);
    assert_eq!(only["runs"][1], json!(null), "{only}");
    assert_eq!(only["runs"][0]["id"], runs["runs"][1]["id"], "{only}");
    let run = runs["runs"][0]["id"].as_str().unwrap_or_default();
    let (_, story) = with_token(
        "GET",
        &format!("{}/v1/runs/{run}/timeline", serve.url),
        ALICE,
        None,
    );
    assert_eq!(
        story["rounds"][0]["tool_calls"][0]["result"], "saved note.txt",
        "{story}"
    );
    assert_eq!(
        story["approvals"][0]["decision"]["decision"], "approve",
        "{story}"
    );
    let (_, bobs) = with_token("GET", &format!("{}/v1/runs", serve.url), BOB, None);
    let bob_saw: Vec<&str> = bobs["runs"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["agent"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        bob_saw,
        ["call:save"],
        "bob sees his own refused call only: {bobs}"
    );
}

/// `kiln serve` over [`tool_scripts`] with the three tokens.
pub(crate) fn tool_server() -> (Scripts, Serve) {
    let s = tool_scripts();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib"],
        &[("KILN_TOKENS", &tokens())],
    );
    (s, serve)
}

#[test]
fn a_broken_script_shows_its_error_at_file_line_and_column_until_it_is_fixed() {
    let (s, serve) = tool_server();
    let feed = listen(&serve, BOB);
    let scripts_url = format!("{}/v1/scripts", serve.url);
    let (status, health) = with_token("GET", &scripts_url, BOB, None);
    assert_eq!(status, 200, "{health}");
    let file = &health["files"][0];
    assert!(
        file["path"].as_str().unwrap_or("").ends_with("tools.rhai"),
        "{health}"
    );
    assert_eq!(file["tools"], json!(["save", "order"]), "{health}");
    assert_eq!(health["errors"], json!([]), "{health}");

    std::thread::sleep(Duration::from_millis(300));
    let path = s.path().join("tools.rhai");
    let good = std::fs::read_to_string(&path).expect("script");
    std::fs::write(
        &path,
        format!("{good}\ntool(\"broken\").description(\"x\")\n    .handler(|a| a.);\n"),
    )
    .expect("break it");
    // The broken line is the second one added.
    let broken_line = good.lines().count() + 2;
    let reload = drain_until(&feed, "reload");
    assert_eq!(reload["ok"], false, "{reload}");
    let error = &reload["errors"][0];
    assert!(
        error["file"].as_str().unwrap_or("").ends_with("tools.rhai"),
        "{reload}"
    );
    assert_eq!(error["line"], broken_line, "{reload}");
    assert!(error["column"].as_u64().unwrap_or(0) > 0, "{reload}");
    let (_, health) = with_token("GET", &scripts_url, BOB, None);
    assert_eq!(health["errors"][0]["line"], broken_line, "{health}");
    assert_eq!(health["reloads"][0]["ok"], false, "{health}");

    std::fs::write(&path, &good).expect("fix it");
    let reload = drain_until(&feed, "reload");
    assert_eq!(reload["ok"], true, "{reload}");
    let (_, health) = with_token("GET", &scripts_url, BOB, None);
    assert_eq!(health["errors"], json!([]), "{health}");
}

/// Waits (up to 20 s) for the next event named `name`; its data.
/// The events up to and including the first named `name` (at most 20 s).
fn drain_through(
    rx: &std::sync::mpsc::Receiver<(String, Value)>,
    name: &str,
) -> Vec<(String, Value)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut got = Vec::new();
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(ev) => {
                let last = ev.0 == name;
                got.push(ev);
                if last {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    got
}

fn drain_until(rx: &std::sync::mpsc::Receiver<(String, Value)>, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok((n, data)) if n == name => return data,
            Ok(_) => {}
            Err(_) => break,
        }
    }
    panic!("no {name} event came");
}
