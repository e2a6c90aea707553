//! Rate limits per tool: one bucket shared by the runs of a process; limited calls fail with
//! the time to the next slot (or wait for it with `wait: true`); `kiln logs` shows them.

use crate::common::*;
use kiln::{CallOptions, Grants, Host};
use serde_json::{Value, json};

const TOOLS: &str = r#"
tool("quote").description("Quotes a price").param("sku", "string")
    .rate_limit(1, 60)
    .handler(|args| `quote for ${args.sku}`);
tool("stamp").description("Records when it started").param("who", "string").requires("store")
    .rate_limit(1, 1, #{ wait: true })
    .handler(|args| { store_set("stamps", args.who, now()); args.who });
tool("stamps").description("When each stamp started").requires("store")
    .handler(|args| #{ a: store_get("stamps", "a"), b: store_get("stamps", "b") });
agent("buyer").provider("anthropic").model("mock-model").tools(["quote"]);
"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn host(s: &Scripts) -> std::sync::Arc<Host> {
    Host::builder()
        .scripts(s.path())
        .workspace(s.path())
        .grants(Grants::parse(&["store"]).expect("grants"))
        .build()
        .expect("host")
}

#[test]
fn two_concurrent_runs_share_the_bucket_and_the_second_is_told_when_to_retry() {
    let s = Scripts::new(&[("tools.rhai", TOOLS)]);
    let host = host(&s);
    let (a, b) = runtime().block_on(async {
        tokio::join!(
            host.call("quote", json!({"sku": "A"}), CallOptions::default()),
            host.call("quote", json!({"sku": "B"}), CallOptions::default()),
        )
    });
    let outcomes = [a.expect("call a"), b.expect("call b")];
    let ok = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(ok, 1, "one call gets the only slot");
    let limited = outcomes
        .iter()
        .find(|o| !o.is_ok())
        .expect("a limited call");
    let (kind, message) = failure(limited);
    assert_eq!(kind, "rate_limited");
    assert_eq!(
        limited.attempts, 0,
        "a limited call never reaches the handler"
    );
    let wait: f64 = message
        .rsplit("free in ")
        .next()
        .and_then(|t| t.trim_end_matches('s').parse().ok())
        .unwrap_or_else(|| panic!("no retry time in: {message}"));
    assert!(wait > 50.0 && wait <= 60.0, "{message}");
    assert!(message.contains("1 call per 60s"), "{message}");
}

#[test]
fn with_wait_the_second_call_starts_after_the_window() {
    let s = Scripts::new(&[("tools.rhai", TOOLS)]);
    let host = host(&s);
    let (a, b) = runtime().block_on(async {
        tokio::join!(
            host.call("stamp", json!({"who": "a"}), CallOptions::default()),
            host.call("stamp", json!({"who": "b"}), CallOptions::default()),
        )
    });
    assert!(
        a.expect("a").is_ok() && b.expect("b").is_ok(),
        "both wait their turn"
    );
    let stamps = host
        .call_blocking("stamps", json!({}), CallOptions::default())
        .expect("stamps")
        .result
        .expect("stamps read");
    let stamp = |who: &str| {
        stamps[who]
            .as_f64()
            .unwrap_or_else(|| panic!("{who} ran: {stamps}"))
    };
    let (ta, tb) = (stamp("a"), stamp("b"));
    // The tools' own start times: whichever ran second started a full window after the first.
    assert!((ta - tb).abs() >= 0.95, "started {ta} and {tb}");
}

#[test]
fn the_model_sees_the_limit_and_kiln_logs_shows_the_limited_call() {
    let s = Scripts::new(&[("tools.rhai", TOOLS)]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [
            {"name": "quote", "args": {"sku": "A"}},
            {"name": "quote", "args": {"sku": "B"}}
        ]},
        {"text": "One quote had to wait."}
    ]}));
    let out = ask(
        &[
            "buyer",
            "Quote A and B",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
        ],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let second = mock.requests()[1]["body"].to_string();
    assert!(
        second.contains("Rate limit of tool \\\"quote\\\" reached") && second.contains("free in"),
        "the model is told: {second}"
    );
    let logs = kiln(&["logs"], s.path());
    let text = stdout(&logs);
    assert!(
        text.contains("✗ quote(") && text.contains("rate limited: Rate limit of tool"),
        "{text}"
    );
    let logged: Value =
        serde_json::from_str(&stdout(&kiln(&["logs", "--json"], s.path()))).expect("logs json");
    let kinds: Vec<&str> = logged[0]["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["outcome"]["error"]["kind"].as_str())
        .collect();
    assert_eq!(kinds, vec!["rate_limited"]);
}

#[test]
fn bad_rate_limits_are_load_errors_at_their_call() {
    let s = Scripts::new(&[(
        "bad.rhai",
        "tool(\"t\")\n    .rate_limit(0, 1)\n    .handler(|args| 1);\ntool(\"u\").rate_limit(1, 1, #{ wiat: true }).handler(|args| 1);\n",
    )]);
    let errors = s.errors(&s.host());
    assert_eq!(
        errors,
        vec![
            "DIR/bad.rhai:2:6: tool \"t\": rate_limit: calls must be a positive number, not 0",
            "DIR/bad.rhai:4:11: tool \"u\": rate_limit: unknown option \"wiat\" (known: wait)",
        ]
    );
}

#[test]
fn native_tools_take_the_same_rate_limit() {
    use kiln::NativeTool;
    use kiln::tool::RateLimit;
    use std::time::Duration;
    let ping = |name: &str, limit: RateLimit| {
        NativeTool::new(name, |_args: Value, _ctx: &kiln::CallContext| async move {
            Ok(json!("pong"))
        })
        .rate_limit(limit)
    };
    let host = Host::builder()
        .tool(ping("ping", RateLimit::new(1, Duration::from_secs(60))))
        .tool(ping(
            "broken_limit",
            RateLimit::new(0, Duration::from_secs(1)),
        ))
        .build()
        .expect("host");
    let errors: Vec<String> = host.load_errors().iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("tool \"broken_limit\": rate_limit: calls must be at least 1"),
        "{errors:?}"
    );
    let rt = runtime();
    let first = rt
        .block_on(host.call("ping", json!({}), CallOptions::default()))
        .expect("call");
    assert!(first.is_ok());
    let second = rt
        .block_on(host.call("ping", json!({}), CallOptions::default()))
        .expect("call");
    assert_eq!(failure(&second).0, "rate_limited");
}

#[test]
fn waiting_is_bounded_by_the_tools_deadline() {
    let s = Scripts::new(&[(
        "t.rhai",
        "tool(\"patient\").timeout(\"200ms\").rate_limit(1, 60, #{ wait: true }).handler(|args| \"ok\");",
    )]);
    let host = host(&s);
    let first = host
        .call_blocking("patient", json!({}), CallOptions::default())
        .expect("call");
    assert!(first.is_ok());
    // The next slot is a minute away, past the 200 ms deadline: no point waiting.
    let second = host
        .call_blocking("patient", json!({}), CallOptions::default())
        .expect("call");
    let (kind, message) = failure(&second);
    assert_eq!(kind, "rate_limited");
    assert!(message.contains("1 call per 60s"), "{message}");
}
