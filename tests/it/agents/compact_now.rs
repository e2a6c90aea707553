//! Compaction asked for, not waited for: `kiln sessions compact NAME` rewrites a saved session
//! as a summary and its latest turns (the run log keeps the originals), and
//! `POST /v1/responses/compact` answers a conversation as a `compaction` item and its latest
//! items, which the next `POST /v1/responses` takes as input — all against `kiln mock`.

use crate::common::{Mock, Scripts, ask, get, kiln, kiln_bin, post, stderr, stdout};
use crate::wires::responses_support::{Door, HELLO, violations};
use serde_json::{Value, json};

const SUMMARY: &str = "SUMMARY: the customer wants 40 red bricks by Friday.";

fn shop(mock: &Mock) -> Scripts {
    Scripts::new(&[(
        "clerk.rhai",
        &format!(
            r#"agent("clerk").provider("openai").model("mock-model").base_url("{}/v1").system("You sell bricks.");"#,
            mock.url
        ),
    )])
}

fn is_summary_request(r: &Value) -> bool {
    r["body"]["messages"][0]["content"]
        .as_str()
        .is_some_and(|s| s.starts_with("You compact a conversation"))
}

fn contents(r: &Value) -> Vec<String> {
    r["body"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// `kiln sessions compact ...` with the provider's key set, as a person would run it.
fn compact(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    std::process::Command::new(kiln_bin())
        .args(["sessions", "compact"])
        .args(args)
        .args(["--no-stdlib", "--scripts", "."])
        .current_dir(dir)
        .env("OPENAI_API_KEY", "sk-test")
        .env("NO_COLOR", "1")
        .output()
        .expect("kiln sessions compact")
}

fn session(dir: &std::path::Path) -> Value {
    let out = kiln(
        &["sessions", "show", "s", "--no-stdlib", "--scripts", "."],
        dir,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("session json")
}

#[test]
fn a_session_compacted_by_hand_keeps_its_latest_turns_and_the_log_its_originals() {
    let mock = Mock::start(&json!({"loop": true, "turns": [
        {"system": "You compact a conversation", "text": SUMMARY, "usage": {"input_tokens": 300, "output_tokens": 20}},
        {"system": "You sell bricks", "text": "Noted."}
    ]}));
    let scripts = shop(&mock);
    let dir = scripts.path();
    let turn = |n: usize| {
        let q = format!("Question {n}");
        let out = ask(
            &[
                "clerk",
                &q,
                "--session",
                "s",
                "--no-stdlib",
                "--scripts",
                ".",
            ],
            dir,
        );
        assert!(out.status.success(), "{}", stderr(&out));
    };
    (0..6).for_each(turn);
    assert_eq!(session(dir)["messages"].as_array().map(Vec::len), Some(12));

    let out = compact(&["s", "--keep-last", "4"], dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let said = stdout(&out);
    assert!(
        said.contains("compacted session s: 12 messages → 5"),
        "{said}"
    );
    assert!(said.contains("300+20 tokens"), "{said}");
    let messages = session(dir)["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(messages.len(), 5, "{messages:#?}");
    let opening = messages[0]["content"].as_str().unwrap_or_default();
    assert!(
        opening.starts_with("Summary of the earlier conversation"),
        "{opening}"
    );
    assert!(opening.contains(SUMMARY), "{opening}");
    assert_eq!(messages[1]["content"], "Question 4");
    // The summary request carried the older turns as text, not the kept ones.
    let requests = mock.requests();
    let summaries: Vec<&Value> = requests.iter().filter(|r| is_summary_request(r)).collect();
    assert_eq!(summaries.len(), 1);
    let asked = contents(summaries[0]).join("\n");
    assert!(
        asked.contains("User: Question 0") && asked.contains("User: Question 3"),
        "{asked}"
    );
    assert!(!asked.contains("Question 4"), "{asked}");

    // The next turn goes on from the summary.
    turn(6);
    let last = mock.requests().last().cloned().expect("a request");
    let sent = contents(&last);
    assert!(sent[1].contains(SUMMARY), "{sent:#?}");
    assert!(!sent.iter().any(|c| c == "Question 0"), "{sent:#?}");
    assert_eq!(sent.last().map(String::as_str), Some("Question 6"));

    // The run log keeps every original turn, and the compaction as a run of its own.
    let out = kiln(&["logs", "--json", "--no-stdlib", "--scripts", "."], dir);
    let logs = stdout(&out);
    assert!(logs.contains("compact:clerk"), "{logs}");
    assert!(logs.contains("\"prompt\": \"Question 0\""), "{logs}");

    // Trimming asks no model; an unknown session is named.
    let before = mock.requests().len();
    let out = compact(&["s", "--trim", "--keep-last", "2"], dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("trimmed"), "{}", stdout(&out));
    assert_eq!(mock.requests().len(), before);
    let out = compact(&["nope"], dir);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no session named \"nope\""),
        "{}",
        stderr(&out)
    );
}

/// Twelve items: six questions, each answered.
fn conversation() -> Vec<Value> {
    (0..6)
        .flat_map(|n| {
            [
                json!({"role": "user", "content": format!("Question {n}")}),
                json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("Answer {n}")}]}),
            ]
        })
        .collect()
}

#[test]
fn responses_compact_answers_a_compaction_item_the_next_response_reads() {
    let door = Door::start();
    let (status, compacted) = post(
        &door.url("/compact"),
        &json!({"model": "greeter", "input": conversation()}),
        &[],
    );
    assert_eq!(status, 200, "{compacted}");
    let errors = violations("CompactResource", &compacted);
    assert!(errors.is_empty(), "{errors:#?}\n{compacted:#}");
    assert_eq!(compacted["object"], "response.compaction");
    let output = compacted["output"].as_array().cloned().unwrap_or_default();
    let types: Vec<&str> = output.iter().filter_map(|o| o["type"].as_str()).collect();
    assert_eq!(types[0], "compaction");
    assert_eq!(
        types.len(),
        9,
        "the compaction, then the latest eight: {types:?}"
    );
    assert_eq!(output[1]["content"][0]["text"], "Question 2");
    assert_eq!(
        compacted["usage"]["input_tokens"], 7,
        "the summary request's usage"
    );

    // The next request sends the output back with a new question: the model reads the summary.
    let mut input = output.clone();
    input.push(json!({"role": "user", "content": "And now?"}));
    let (status, next) = post(
        &door.url(""),
        &json!({"model": "greeter", "input": input}),
        &[],
    );
    assert_eq!(
        (status, &next["status"]),
        (200, &json!("completed")),
        "{next}"
    );
    let last = door
        .model_requests("greeter")
        .last()
        .cloned()
        .expect("a request");
    let sent = contents(&last);
    let summary = sent
        .iter()
        .find(|c| c.starts_with("Summary of the earlier conversation"));
    assert!(summary.is_some_and(|s| s.contains(HELLO)), "{sent:#?}");
    assert!(!sent.iter().any(|c| c == "Question 0"), "{sent:#?}");

    // Continuing a stored response, compacting what it holds.
    let (_, first) = post(
        &door.url(""),
        &json!({"model": "greeter", "input": "Hi"}),
        &[],
    );
    let (status, from_stored) = post(
        &door.url("/compact"),
        &json!({"model": "greeter", "previous_response_id": first["id"], "input": "more"}),
        &[],
    );
    assert_eq!(status, 200, "{from_stored}");
    assert_eq!(
        from_stored["output"][0]["type"], "message",
        "too short to compact: {from_stored}"
    );

    // A kept message's image comes back as the part it came in.
    let mut with_image = conversation();
    with_image[10]["content"] = json!([{"type": "input_text", "text": "Question 5"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]);
    let (status, kept) = post(
        &door.url("/compact"),
        &json!({"model": "greeter", "input": with_image}),
        &[],
    );
    assert_eq!(status, 200, "{kept}");
    assert_eq!(
        kept["output"][7]["content"][1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}),
        "{kept}"
    );

    // Bad input is named; the run log has the compaction as the caller's run.
    let forged = json!({"model": "greeter", "input": [{"type": "compaction", "encrypted_content": "gAAAA"}, {"role": "user", "content": "hi"}]});
    let (status, e) = post(&door.url(""), &forged, &[]);
    assert_eq!(status, 400, "{e}");
    assert_eq!(e["error"]["param"], "input[0].encrypted_content", "{e}");
    let (status, e) = post(&door.url("/compact"), &json!({"model": "greeter"}), &[]);
    assert_eq!(
        (status, &e["error"]["param"]),
        (400, &json!("input")),
        "{e}"
    );
    let (status, _) = post(
        &door.url("/compact"),
        &json!({"model": "nope", "input": "x"}),
        &[],
    );
    assert_eq!(status, 404);
    let (_, runs) = get(&format!("{}/v1/runs", door.serve.url));
    assert!(runs.to_string().contains("compact:greeter"), "{runs}");
}

/// With tokens, a compaction reads only the caller's own stored responses and is the caller's
/// run: another actor's `previous_response_id` is unknown to them.
#[test]
fn a_compaction_reads_only_the_callers_own_responses() {
    use crate::common::with_token;
    let mock = Mock::start(&json!({"loop": true, "turns": [{"text": "Noted."}]}));
    let scripts = shop(&mock);
    let tokens = json!([
        {"token": "alice-token-0123456789", "actor": "alice"},
        {"token": "bob-token-0123456789ab", "actor": "bob"}
    ])
    .to_string();
    let serve = crate::doors::serve::Serve::start(
        scripts.path(),
        &scripts.path().join("k.db"),
        &["--no-stdlib"],
        &[("KILN_TOKENS", &tokens)],
    );
    let responses = format!("{}/v1/responses", serve.url);
    let (alice, bob) = ("alice-token-0123456789", "bob-token-0123456789ab");
    let (status, first) = with_token(
        "POST",
        &responses,
        alice,
        Some(&json!({"model": "clerk", "input": conversation()[..11]})),
    );
    assert_eq!(status, 200, "{first}");
    let ask = json!({"model": "clerk", "previous_response_id": first["id"], "input": "more"});
    let compact = format!("{responses}/compact");
    let (status, refused) = with_token("POST", &compact, bob, Some(&ask));
    assert_eq!(status, 404, "{refused}");
    assert_eq!(
        refused["error"]["param"], "previous_response_id",
        "{refused}"
    );
    let (status, compacted) = with_token("POST", &compact, alice, Some(&ask));
    assert_eq!(status, 200, "{compacted}");
    assert_eq!(compacted["output"][0]["type"], "compaction", "{compacted}");
    // The compaction is alice's run: bob's list does not show it.
    let runs = format!("{}/v1/runs", serve.url);
    let (_, theirs) = with_token("GET", &runs, bob, None);
    assert!(!theirs.to_string().contains("compact:clerk"), "{theirs}");
    let (_, hers) = with_token("GET", &runs, alice, None);
    assert!(hers.to_string().contains("compact:clerk"), "{hers}");
}
