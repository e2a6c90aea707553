//! A judge against `kiln mock` on 127.0.0.1 (OpenAI's wire): a malformed verdict is repaired,
//! every attempt's tokens are counted, and a judge that never answers well fails with them.

use kiln_eval::report::{CallRecord, RunRecord};
use kiln_eval::score::judge::{JudgeError, JudgeSettings, grade};
use kiln_mock::scenario::{MockUsage, Scenario, Turn};
use kiln_registry::eval_spec::{Case, JudgeSpec};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn turn(text: &str, input: u64, output: u64) -> Turn {
    Turn {
        text: Some(text.into()),
        usage: Some(MockUsage {
            input_tokens: input,
            output_tokens: output,
            reasoning_tokens: 0,
        }),
        ..Turn::default()
    }
}

/// A mock serving `turns`; its address.
async fn mock(turns: Vec<Turn>) -> std::net::SocketAddr {
    let scenario = Scenario {
        turns,
        require_auth: false,
        ..Scenario::default()
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let (local, serve) = kiln_mock::bind(scenario, addr).await.expect("bind");
    tokio::spawn(serve);
    local
}

/// The requests the mock received (`GET /_kiln/requests`).
async fn requests(addr: std::net::SocketAddr) -> Vec<Value> {
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let get = "GET /_kiln/requests HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    s.write_all(get.as_bytes()).await.expect("write");
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.expect("read");
    let body = raw.split_once("\r\n\r\n").expect("a body").1;
    serde_json::from_str::<Value>(body)
        .expect("json")
        .as_array()
        .cloned()
        .expect("a list")
}

fn spec(addr: std::net::SocketAddr, retries: u32) -> JudgeSpec {
    JudgeSpec {
        rubric: "The answer must state the 30-day refund window.".into(),
        model: "openai:gpt-5-mini".into(),
        retries,
        base_url: Some(format!("http://{addr}/v1")),
        price: None,
    }
}

fn case() -> Case {
    Case {
        name: "refund".into(),
        input: json!("Can I return my order from last week?"),
        expected: Some(json!("Yes, within 30 days.")),
        metadata: Value::Null,
        loc: Default::default(),
    }
}

fn run() -> RunRecord {
    RunRecord {
        answer: "Yes, you can return it.".into(),
        tool_calls: vec![CallRecord {
            name: "lookup_order".into(),
            args: json!({"id": "A-17"}),
            ..CallRecord::default()
        }],
        ..RunRecord::default()
    }
}

/// The text of every user message of a recorded OpenAI request.
fn user_texts(request: &Value) -> Vec<String> {
    request["body"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn a_malformed_verdict_is_repaired_and_both_attempts_counted() {
    let addr = mock(vec![
        turn("I think it is fine", 100, 20),
        turn(
            r#"{"pass": false, "score": 0.25, "reason": "misses the refund window"}"#,
            150,
            30,
        ),
    ])
    .await;
    let graded = grade(&spec(addr, 2), &case(), &run(), &JudgeSettings::default())
        .await
        .expect("a verdict");
    assert!(!graded.verdict.passed);
    assert_eq!(graded.verdict.score, 0.25);
    assert_eq!(graded.verdict.reason, "misses the refund window");
    assert_eq!(graded.attempts, 2);
    assert_eq!(
        (graded.usage.input_tokens, graded.usage.output_tokens),
        (250, 50)
    );
    assert_eq!(graded.usage.cost_usd, None);

    let sent = requests(addr).await;
    assert_eq!(sent.len(), 2, "{sent:#?}");
    assert_eq!(sent[0]["body"]["model"], "gpt-5-mini");
    let first = user_texts(&sent[0]);
    assert_eq!(first.len(), 1);
    for part in [
        "Can I return my order from last week?",
        "Yes, within 30 days.",
        "Yes, you can return it.",
        r#"lookup_order {"id":"A-17"}"#,
    ] {
        assert!(first[0].contains(part), "{part:?} not in {:?}", first[0]);
    }
    let system = sent[0]["body"]["messages"][0]["content"]
        .as_str()
        .unwrap_or("");
    assert!(system.contains("30-day refund window"), "{system}");
    let second = user_texts(&sent[1]);
    assert_eq!(second.len(), 2);
    assert!(
        second[1].starts_with("Your answer does not match the required JSON Schema:"),
        "{}",
        second[1]
    );
    assert!(second[1].contains("not JSON"), "{}", second[1]);
}

#[tokio::test]
async fn a_judge_that_never_answers_well_fails_with_its_usage() {
    let addr = mock(vec![
        turn("fine", 10, 1),
        turn(r#"{"pass": "yes"}"#, 20, 2),
        turn(r#"{"pass": true, "score": 7, "reason": "x"}"#, 30, 3),
    ])
    .await;
    let err = grade(&spec(addr, 2), &case(), &run(), &JudgeSettings::default())
        .await
        .expect_err("no verdict");
    match &err {
        JudgeError::NoVerdict { attempts, last, .. } => {
            assert_eq!(*attempts, 3);
            assert!(last.contains("/score"), "{last}");
        }
        other => panic!("expected NoVerdict, got {other:?}"),
    }
    let usage = err.usage();
    assert_eq!((usage.input_tokens, usage.output_tokens), (60, 6));
    assert_eq!(requests(addr).await.len(), 3);
}

#[tokio::test]
async fn an_unknown_provider_is_a_setup_error() {
    let mut s = spec(std::net::SocketAddr::from(([127, 0, 0, 1], 9)), 0);
    s.model = "acme:big".into();
    let err = grade(&s, &case(), &run(), &JudgeSettings::default())
        .await
        .expect_err("unknown provider");
    assert!(matches!(err, JudgeError::Setup { .. }), "{err:?}");
    assert!(
        err.to_string().contains("unknown provider \"acme\""),
        "{err}"
    );
}

#[tokio::test]
async fn a_cancelled_judge_stops_before_asking() {
    let addr = mock(vec![turn(
        r#"{"pass": true, "score": 1, "reason": "ok"}"#,
        5,
        1,
    )])
    .await;
    let settings = JudgeSettings::default();
    settings.cancel.cancel();
    let err = grade(&spec(addr, 0), &case(), &run(), &settings)
        .await
        .expect_err("cancelled");
    assert!(matches!(err, JudgeError::Cancelled { .. }), "{err:?}");
    assert_eq!(err.usage().tokens(), 0);
    assert_eq!(requests(addr).await.len(), 0);
}
