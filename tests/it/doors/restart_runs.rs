//! After a restart (issue 56, item 11): `GET /v1/runs/{id}` and `/v1/runs/{id}/events` answer
//! for the runs `GET /v1/runs` lists from the run log, completed before or interrupted by the
//! restart, with their stored status; `/events` replays the stored steps and ends. Another
//! actor's stored run stays a 404. The real binary on 127.0.0.1.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const ANN: &str = "t-ann-0123456789abcdef";
const BOB: &str = "t-bob-0123456789abcdef";

fn scripts() -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        r#"tool("echo").param("text", "string").handler(|a| `echo ${a.text}`);
tool("wipe").param("what", "string").handler(|a| `wiped ${a.what}`);
policy("careful").applies_to(["wipe"]).check(|c, ctx| ask("wiping is permanent"));
fn plan(m, name, args) {
    let last = m[m.len() - 1];
    if last.role == "user" { #{ tool_calls: [#{ name: name, args: args }] } } else { #{ text: "done" } }
}
agent("echoer").provider("script").tools(["echo"]).planner(|m, t| plan(m, "echo", #{ text: "hi" }));
agent("wiper").provider("script").tools(["wipe"]).planner(|m, t| plan(m, "wipe", #{ what: "all" }));"#,
    )])
}

fn start(s: &Scripts) -> Serve {
    let tokens =
        format!(r#"[{{"token": "{ANN}", "actor": "ann"}}, {{"token": "{BOB}", "actor": "bob"}}]"#);
    Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib"],
        &[("KILN_TOKENS", &tokens)],
    )
}

/// The `event:` names and `data:` values of an SSE stream that ended.
fn sse(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut name = String::new();
    for line in body.lines() {
        if let Some(n) = line.strip_prefix("event:") {
            name = n.trim().to_string();
        } else if let Some(d) = line.strip_prefix("data:") {
            let data = serde_json::from_str(d.trim()).unwrap_or(Value::Null);
            out.push((std::mem::take(&mut name), data));
        }
    }
    out
}

fn events_of(serve: &Serve, id: &str, token: &str) -> (u16, Vec<(String, Value)>) {
    let bearer = format!("Bearer {token}");
    let url = format!("{}/v1/runs/{id}/events", serve.url);
    let (status, _, body) = http("GET", &url, &[("authorization", &bearer)], None);
    (status, sse(&body))
}

#[test]
fn runs_listed_after_a_restart_answer_with_their_stored_status_and_events() {
    let s = scripts();
    let mut first = start(&s);
    let runs = format!("{}/v1/runs", first.url);
    let body = json!({"agent": "echoer", "input": "go"});
    let (status, done) = with_token("POST", &runs, ANN, Some(&body));
    assert_eq!(
        (status, &done["status"]),
        (200, &json!("completed")),
        "{done}"
    );
    let completed = done["id"].as_str().unwrap_or("").to_string();
    let waiting = start_run_as(
        &first.url,
        ANN,
        &json!({"agent": "wiper", "input": "go", "wait": false}),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, run) = with_token("GET", &format!("{runs}/{waiting}"), ANN, None);
        if run["status"] == "awaiting_approval" {
            break;
        }
        assert!(Instant::now() < deadline, "never waited: {run}");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The server dies while a run waits for a person.
    signal(first.child.id(), "KILL");
    let _ = first.child.wait();

    let serve = start(&s);
    let runs = format!("{}/v1/runs", serve.url);
    let (_, listed) = with_token("GET", &runs, ANN, None);
    let status_of = |id: &str| {
        listed["runs"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["id"] == id))
            .map(|r| r["status"].clone())
    };
    assert_eq!(status_of(&completed), Some(json!("completed")), "{listed}");
    assert_eq!(status_of(&waiting), Some(json!("interrupted")), "{listed}");

    // Each answers as the list says, from the run log.
    let (status, run) = with_token("GET", &format!("{runs}/{completed}"), ANN, None);
    assert_eq!(status, 200, "{run}");
    assert_eq!(
        (&run["status"], &run["agent"]),
        (&json!("completed"), &json!("echoer")),
        "{run}"
    );
    assert_eq!(run["report"]["answer"], "done", "{run}");
    assert_eq!(run["report"]["tool_calls"][0]["name"], "echo", "{run}");
    assert_eq!(
        run["report"]["tool_calls"][0]["outcome"]["result"], "echo hi",
        "{run}"
    );
    let (status, run) = with_token("GET", &format!("{runs}/{waiting}?wait=true"), ANN, None);
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["error"]["kind"], "interrupted", "{run}");
    assert!(
        run["report"]["tool_calls"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "the gated tool never ran: {run}"
    );

    // `/events` replays what the log keeps and ends.
    let (status, events) = events_of(&serve, &completed, ANN);
    assert_eq!(status, 200);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "model_request",
            "model_reply",
            "tool_started",
            "tool_finished",
            "model_request",
            "model_reply",
            "text",
            "end"
        ],
        "{events:?}"
    );
    assert_eq!(events[2].1["args"]["text"], "hi", "{events:?}");
    assert_eq!(events[7].1["status"], "completed", "{events:?}");
    let (status, events) = events_of(&serve, &waiting, ANN);
    assert_eq!(status, 200);
    let end = events.last().map(|(n, d)| (n.clone(), d["status"].clone()));
    assert_eq!(
        end,
        Some(("end".into(), json!("interrupted"))),
        "{events:?}"
    );

    // Another actor's stored run is not theirs to see.
    let (status, _) = with_token("GET", &format!("{runs}/{completed}"), BOB, None);
    assert_eq!(status, 404);
    assert_eq!(events_of(&serve, &completed, BOB).0, 404);
    let (status, _) = with_token("GET", &format!("{runs}/run_nope"), ANN, None);
    assert_eq!(status, 404);
}
