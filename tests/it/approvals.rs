//! Approvals that wait for a person over HTTP (`kiln serve`): a run whose call needs approval
//! pauses (`awaiting_approval`, an `approval_requested` event), a second request approves or
//! denies it, and nobody deciding in time denies; a policy's `ask` waits the same way.

pub(crate) mod approval_ends;
pub(crate) mod nested_approvals;
pub(crate) mod tool_asks;
pub(crate) mod tool_asks_http;

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn scripts(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "a.rhai",
        &format!(
            r#"tool("remember").description("Keeps a note").param("text", "string").requires(["store"])
    .handler(|a| {{ store_set("notes", "last", a.text); `kept ${{a.text}}` }});
tool("wipe").description("Deletes notes").param("what", "string")
    .handler(|a| `wiped ${{a.what}}`);
policy("careful").applies_to(["wipe"]).check(|c, ctx| ask("wiping is permanent"));
agent("notes").provider("openai").model("m").base_url("{}/v1").tools(["remember", "wipe"]).ask(["store"]);"#,
            mock.url
        ),
    )])
}

/// Polls the run until its status is `awaiting_approval`; its first pending approval.
pub fn awaiting(serve: &Serve, id: &str) -> Value {
    awaiting_as(serve, id, &[])
}

fn awaiting_as(serve: &Serve, id: &str, auth: &[(&str, &str)]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let (_, _, body) = http("GET", &format!("{}/v1/runs/{id}", serve.url), auth, None);
        let run: Value = serde_json::from_str(&body).unwrap_or_default();
        if run["status"] == "awaiting_approval" {
            return run["approvals"][0].clone();
        }
        assert_eq!(run["status"], "running", "{run}");
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("run {id} never waited for approval");
}

fn start_run(serve: &Serve) -> String {
    start_run_as(serve, &[])
}

fn start_run_as(serve: &Serve, auth: &[(&str, &str)]) -> String {
    let body = json!({"agent": "notes", "input": "go", "wait": false});
    let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, auth);
    assert!((200..300).contains(&status), "{run}");
    run["id"].as_str().expect("id").to_string()
}

/// The error message of a finished run's first tool call.
fn first_error(done: &Value) -> &str {
    done["report"]["tool_calls"][0]["outcome"]["error"]["message"]
        .as_str()
        .unwrap_or("")
}

pub fn finished(serve: &Serve, id: &str) -> Value {
    get(&format!("{}/v1/runs/{id}?wait=true", serve.url)).1
}

#[test]
fn a_run_waits_for_a_person_who_approves_or_denies_over_http() {
    let call = |name: &str, args: Value| json!({"tool_calls": [{"name": name, "args": args}]});
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        call("remember", json!({"text": "milk"})), {"text": "kept it"},
        call("wipe", json!({"what": "all"})), {"text": "not wiped"},
    ]}));
    let s = scripts(&mock);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);

    // An `ask` grant: approved by a second request.
    let id = start_run(&serve);
    let approval = awaiting(&serve, &id);
    assert_eq!(approval["capability"], "store", "{approval}");
    assert!(
        approval["question"]
            .as_str()
            .unwrap_or("")
            .contains("tool \"remember\" may use store only when a person approves: run it with {\"text\":\"milk\"}?"),
        "{approval}"
    );
    let url = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or("")
    );
    let (status, bad) = post(&url, &json!({"decision": "maybe"}), &[]);
    assert_eq!(status, 400, "{bad}");
    let (status, _) = post(&url, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 200);
    let done = finished(&serve, &id);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["report"]["tool_calls"][0]["outcome"]["result"], "kept milk",
        "{done}"
    );
    // Decided already: a second decision does not take effect, and says which one did.
    let (status, gone) = post(&url, &json!({"decision": "deny"}), &[]);
    assert_eq!(status, 409, "decided already: {gone}");
    assert_eq!(gone["error"]["code"], "approval_decided", "{gone}");
    assert_eq!(
        gone["error"]["decision"],
        json!({"decision": "approve"}),
        "{gone}"
    );

    // A policy's `ask`: denied with a reason, which the model reads; the run goes on.
    let id = start_run(&serve);
    let approval = awaiting(&serve, &id);
    assert_eq!(approval["capability"], "policy:careful", "{approval}");
    let url = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or("")
    );
    let (status, _) = post(
        &url,
        &json!({"decision": "deny", "reason": "not today"}),
        &[],
    );
    assert_eq!(status, 200);
    let done = finished(&serve, &id);
    assert_eq!(done["status"], "completed", "{done}");
    let error = first_error(&done);
    assert!(
        error.contains("policy \"careful\" denied the call of wipe: wiping is permanent; it needs approval and it was denied: not today"),
        "{done}"
    );
    // The run's event stream announced the approval.
    let events = http_get(&format!("{}/v1/runs/{id}/events", serve.url));
    assert!(events.contains("event: approval_requested"), "{events}");
}

#[test]
fn nobody_deciding_within_the_deadline_denies() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]},
        {"text": "gave up"},
    ]}));
    let s = scripts(&mock);
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib", "--approval-timeout", "0.5"],
        &[],
    );
    let id = start_run(&serve);
    let done = finished(&serve, &id);
    assert_eq!(done["status"], "completed", "{done}");
    let error = first_error(&done);
    assert!(
        error.contains("needs approval and nobody approved it within 0.5 s"),
        "{done}"
    );
    // Approving after the deadline takes no effect, and says so.
    let approval = done["report"]["tool_calls"][0]["outcome"].to_string();
    assert!(!approval.contains("kept milk"), "{done}");
    let url = format!("{}/v1/runs/{id}/approvals/approval_1", serve.url);
    let (status, late) = post(&url, &json!({"decision": "approve"}), &[]);
    assert_eq!(status, 409, "{late}");
    assert_eq!(late["error"]["decision"]["decision"], "deny", "{late}");
    assert_eq!(
        late["error"]["decision"]["reason"], "nobody approved it within 0.5 s",
        "{late}"
    );
}

/// With tokens: the run's actor or a token granted `approve` decides; another actor cannot
/// even see the approval.
#[test]
fn only_the_runs_actor_or_an_approver_token_decides() {
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]},
        {"text": "kept"},
    ]}));
    let s = scripts(&mock);
    let tokens = json!([
        {"token": "alice-token-0123456789", "actor": "alice", "caps": ["store"]},
        {"token": "bob-approver-0123456789", "actor": "bob", "caps": ["approve"]},
        {"token": "carol-token-0123456789", "actor": "carol", "caps": ["store"]},
    ])
    .to_string();
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib"],
        &[("KILN_TOKENS", &tokens)],
    );
    let alice = [("authorization", "Bearer alice-token-0123456789")];
    let id = start_run_as(&serve, &alice);
    let approval = awaiting_as(&serve, &id, &alice);
    let url = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or("")
    );
    let decide = |auth: &str| {
        let bearer = format!("Bearer {auth}");
        let headers = [("authorization", bearer.as_str())];
        http(
            "POST",
            &url,
            &headers,
            Some(&json!({"decision": "approve"})),
        )
        .0
    };
    assert_eq!(
        decide("carol-token-0123456789"),
        404,
        "another actor does not see the run"
    );
    assert_eq!(
        decide("bob-approver-0123456789"),
        200,
        "an approver token decides"
    );
    let (_, _, body) = http(
        "GET",
        &format!("{}/v1/runs/{id}?wait=true", serve.url),
        &alice,
        None,
    );
    let done: Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(
        done["report"]["tool_calls"][0]["outcome"]["result"], "kept milk",
        "{done}"
    );
}

/// A capability the tool declares as its own (no host function asks for it): the run waits
/// for a person before the handler runs, as for the host functions' grants.
#[test]
fn a_tools_own_ask_capability_waits_for_a_person_before_the_handler() {
    let call = json!({"tool_calls": [{"name": "vault_read", "args": {"key": "k"}}]});
    let mock = Mock::start(&json!({"require_auth": false, "turns": [
        call, {"text": "read"}, call, {"text": "refused"},
    ]}));
    let s = Scripts::new(&[(
        "vault.rhai",
        &format!(
            r#"tool("vault_read").description("Read a secret").param("key", "string").requires("vault").handler(|a| "VAULT-SECRET");
agent("notes").provider("openai").model("m").base_url("{}/v1").tools(["vault_read"]).capabilities(["vault"]).ask(["vault"]);"#,
            mock.url
        ),
    )]);
    let serve = Serve::start(s.path(), &s.path().join("k.db"), &["--no-stdlib"], &[]);
    for (decision, result) in [("approve", Some("VAULT-SECRET")), ("deny", None)] {
        let id = start_run(&serve);
        let approval = awaiting(&serve, &id);
        assert_eq!(approval["capability"], "vault", "{approval}");
        let url = format!(
            "{}/v1/runs/{id}/approvals/{}",
            serve.url,
            approval["id"].as_str().unwrap_or("")
        );
        let (status, _) = post(&url, &json!({"decision": decision}), &[]);
        assert_eq!(status, 200);
        let done = finished(&serve, &id);
        let outcome = &done["report"]["tool_calls"][0]["outcome"];
        match result {
            Some(r) => assert_eq!(outcome["result"], r, "{done}"),
            None => {
                assert!(
                    first_error(&done).contains("\"vault\" needs approval"),
                    "{done}"
                );
                assert!(!done.to_string().contains("VAULT-SECRET"), "{done}");
            }
        }
    }
}

/// Starts a run that waits for approval; the server, the run id and the decision URL.
fn waiting_run(s: &Scripts) -> (Serve, String, String) {
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib", "--max-body", "20000"],
        &[],
    );
    let id = start_run(&serve);
    let approval = awaiting(&serve, &id);
    let url = format!(
        "{}/v1/runs/{id}/approvals/{}",
        serve.url,
        approval["id"].as_str().unwrap_or("")
    );
    (serve, id, url)
}

fn one_call_then(text: &str) -> Mock {
    Mock::start(&json!({"require_auth": false, "turns": [
        {"tool_calls": [{"name": "remember", "args": {"text": "milk"}}]},
        {"text": text},
    ]}))
}

/// A decision body names each key once: `{"decision": "deny", "decision": "approve"}` used to
/// approve (serde_json keeps the last); now it is a 400 and the call still waits.
#[test]
fn a_decision_that_names_a_key_twice_is_refused() {
    let mock = one_call_then("not kept");
    let s = scripts(&mock);
    let (serve, id, url) = waiting_run(&s);
    let json_type = [("content-type", "application/json")];
    let twice = r#"{"decision": "deny", "decision": "approve"}"#;
    let (status, _, body) = http_raw("POST", &url, &json_type, twice);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("\\\"decision\\\" is given twice"), "{body}");
    assert_eq!(
        awaiting(&serve, &id)["capability"],
        "store",
        "still waiting"
    );
    // The same rule for every JSON body.
    let runs = format!("{}/v1/runs", serve.url);
    let (status, _, body) = http_raw(
        "POST",
        &runs,
        &json_type,
        r#"{"agent": "notes", "input": "a", "input": "b"}"#,
    );
    assert_eq!(status, 400, "{body}");
}

/// A body over `--max-body` is refused with OpenAI's JSON error at every `/v1` route (the
/// decision's was axum's plain text).
#[test]
fn every_body_over_the_limit_gets_a_json_error() {
    let mock = one_call_then("not kept");
    let s = scripts(&mock);
    let (serve, _, url) = waiting_run(&s);
    let big = json!({"decision": "deny", "reason": "x".repeat(30000)});
    let runs = format!("{}/v1/runs", serve.url);
    let chat = format!("{}/v1/chat/completions", serve.url);
    for route in [&url, &runs, &chat] {
        let (status, headers, body) = http("POST", route, &[], Some(&big));
        assert_eq!(status, 413, "{route}: {body}");
        let content_type = headers.iter().find(|(k, _)| k == "content-type");
        assert_eq!(
            content_type.map(|(_, v)| v.as_str()),
            Some("application/json"),
            "{route}: {body}"
        );
        let e: Value = serde_json::from_str(&body).unwrap_or_default();
        assert_eq!(
            e["error"]["type"], "invalid_request_error",
            "{route}: {body}"
        );
        assert!(
            e["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("limit of 20000 bytes"),
            "{route}: {body}"
        );
    }
}

/// A deny reason reaches the model (and the run log) cut to 1000 characters, saying so,
/// without control characters, escape sequences or bidi overrides; it went verbatim.
#[test]
fn a_deny_reason_reaches_the_model_cut_and_clean() {
    let mock = one_call_then("not kept");
    let s = scripts(&mock);
    let (serve, id, url) = waiting_run(&s);
    let reason = format!(
        "\r\u{1b}[2J\u{1b}[31mfake\u{0}\u{202e}gnp.exe\u{1b}[0m\n{}",
        "y".repeat(5000)
    );
    let (status, body) = post(&url, &json!({"decision": "deny", "reason": reason}), &[]);
    assert_eq!(status, 200, "{body}");
    let done = finished(&serve, &id);
    let error = first_error(&done);
    let cut = "[cut: the reason was longer than 1000 characters]";
    assert!(
        error.contains(&format!("it was denied: fakegnp.exe {}", "y".repeat(100))),
        "{done}"
    );
    assert!(error.ends_with(cut) && error.len() < 1300, "{error}");
    let unsafe_char = |c: char| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c);
    assert!(!error.chars().any(unsafe_char), "{error:?}");
    // The model read the same.
    mock.wait_for_requests(2);
    let asked = mock.requests()[1].to_string();
    assert!(asked.contains(cut), "{asked}");
    for bad in ["\\u001b", "\\u0000", "\\r", "\u{202e}"] {
        assert!(!asked.contains(bad), "{bad:?} reached the model: {asked}");
    }
}
