//! Steering a run while it runs (`POST /v1/runs/{id}/input`) on `kiln serve` against
//! `kiln mock`: a message added while a tool works reaches the next model request (what the
//! mock received), shows on the run's events, and an ended run refuses more.

use crate::common::{Mock, Scripts, get, http, post};
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn kitchen(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "kitchen.rhai",
        &format!(
            r#"tool("simmer").description("Simmers the soup a while").param("minutes", "integer")
  .handler(|a| {{ sleep(1.5); `simmered ${{a.minutes}} minutes` }});
agent("chef").provider("openai").model("mock-model").base_url("{}/v1").tools(["simmer"]);"#,
            mock.url
        ),
    )])
}

fn scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"tool_calls": [{"name": "simmer", "args": {"minutes": 10}}]},
        {"text": "Soup's ready, with basil."}
    ]})
}

/// Every user message's text of a request the mock received.
pub(crate) fn user_texts(request: &Value) -> Vec<String> {
    let messages = request["body"]["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The chef's run started (not waited for) on a `kiln serve` against its mock: the mock, the
/// project, the server and the run's id.
fn start_soup() -> (Mock, Scripts, Serve, String) {
    let mock = Mock::start(&scenario());
    let scripts = kitchen(&mock);
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--no-stdlib"],
        &[],
    );
    let (status, started) = post(
        &format!("{}/v1/runs", serve.url),
        &json!({"agent": "chef", "input": "make soup", "wait": false}),
        &[],
    );
    assert_eq!(status, 202, "{started}");
    let id = started["id"].as_str().expect("run id").to_string();
    (mock, scripts, serve, id)
}

#[test]
fn a_message_added_mid_run_reaches_the_next_model_request() {
    let (mock, _scripts, serve, id) = start_soup();
    let url = &serve.url;
    mock.wait_for_requests(1);
    // The first round's tool simmers for 1.5 s: the message waits for the next request.
    let input = format!("{url}/v1/runs/{id}/input");
    let (status, queued) = post(&input, &json!({"text": "add basil, please"}), &[]);
    assert_eq!(status, 202, "{queued}");
    assert_eq!(queued["waiting"], 1, "{queued}");
    let (status, bad) = post(&input, &json!({"text": ""}), &[]);
    assert_eq!(status, 400, "{bad}");

    let deadline = Instant::now() + Duration::from_secs(20);
    let mut done = Value::Null;
    while Instant::now() < deadline {
        let (_, run) = get(&format!("{url}/v1/runs/{id}"));
        if run["status"] != "running" {
            done = run;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(done["status"], "completed", "{done}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(user_texts(&requests[0]), ["make soup"]);
    assert_eq!(
        user_texts(&requests[1]),
        ["make soup", "add basil, please"],
        "the second request carries the message after the tool's result"
    );
    let (_, _, events) = http("GET", &format!("{url}/v1/runs/{id}/events"), &[], None);
    assert!(
        events.contains("event: input") && events.contains("add basil, please"),
        "{events}"
    );
    let (status, ended) = post(&input, &json!({"text": "too late"}), &[]);
    assert_eq!(status, 409, "{ended}");
}

#[test]
fn a_cancelled_run_ends_at_its_round_and_what_waited_never_runs() {
    let (mock, _scripts, serve, id) = start_soup();
    let url = &serve.url;
    mock.wait_for_requests(1);
    let input = format!("{url}/v1/runs/{id}/input");
    let (status, _) = post(&input, &json!({"text": "add basil"}), &[]);
    assert_eq!(status, 202);
    let (status, _, _) = http("POST", &format!("{url}/v1/runs/{id}/cancel"), &[], None);
    assert_eq!(status, 202);
    let (_, run) = get(&format!("{url}/v1/runs/{id}?wait=true"));
    assert_eq!(run["status"], "cancelled", "{run}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        mock.requests().len(),
        1,
        "nothing queued ran after the cancel"
    );
    let (status, ended) = post(&input, &json!({"text": "too late"}), &[]);
    assert_eq!(status, 409, "{ended}");
}

/// `kiln ask` on a terminal (a real pseudo-terminal): a line typed while the tool simmers is
/// added to the run and reaches its next model request; the terminal says so.
#[test]
fn a_line_typed_at_kiln_ask_on_a_terminal_reaches_the_next_request() {
    let mock = Mock::start(&scenario());
    let scripts = kitchen(&mock);
    let mut cmd = std::process::Command::new(crate::common::kiln_bin());
    cmd.args(["ask", "chef", "Make soup.", "--no-stdlib", "--scripts", "."])
        .current_dir(scripts.path())
        .env("OPENAI_API_KEY", "sk-test")
        .env("NO_COLOR", "1")
        .env("TERM", "xterm");
    let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn kiln ask");
    p.exp_string("to add it to the run").expect("the hint");
    mock.wait_for_requests(1);
    p.send_line("Add basil, please.").expect("type");
    p.exp_string("added to the run")
        .expect("the terminal says it was added");
    // The answer streams in pieces between progress lines: the mock shows what was asked.
    p.exp_eof().expect("kiln ask ends");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert_eq!(
        user_texts(&requests[1]),
        ["Make soup.", "Add basil, please."],
        "the typed line follows the tool's result"
    );
}

/// With tokens, only the run's own actor adds to it: another actor is told there is no such
/// run, and the run never hears them.
#[test]
fn another_actor_cannot_add_to_a_run() {
    use crate::common::{start_run_as, with_token};
    let mock = Mock::start(&scenario());
    let scripts = kitchen(&mock);
    let tokens = json!([
        {"token": "alice-token-0123456789", "actor": "alice"},
        {"token": "bob-token-0123456789ab", "actor": "bob"}
    ])
    .to_string();
    let serve = Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--no-stdlib"],
        &[("KILN_TOKENS", &tokens)],
    );
    let start = json!({"agent": "chef", "input": "make soup", "wait": false});
    let id = start_run_as(&serve.url, "alice-token-0123456789", &start);
    mock.wait_for_requests(1);
    let input = format!("{}/v1/runs/{id}/input", serve.url);
    let said = json!({"text": "add salt, lots"});
    let (status, refused) = with_token("POST", &input, "bob-token-0123456789ab", Some(&said));
    assert_eq!(status, 404, "{refused}");
    let (status, _) = with_token(
        "POST",
        &input,
        "alice-token-0123456789",
        Some(&json!({"text": "add basil"})),
    );
    assert_eq!(status, 202);
    let wait = format!("{}/v1/runs/{id}?wait=true", serve.url);
    let (_, done) = with_token("GET", &wait, "alice-token-0123456789", None);
    assert_eq!(done["status"], "completed", "{done}");
    let requests = mock.requests();
    assert_eq!(
        user_texts(&requests[1]),
        ["make soup", "add basil"],
        "bob's never reached it"
    );
}
