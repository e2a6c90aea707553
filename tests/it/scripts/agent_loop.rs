//! The tool-calling loop, end to end: the real binary against `kiln mock` over HTTP.

use crate::common::*;
use serde_json::{Value, json};

/// Tools and agents used by the loop tests (one per provider).
const AGENTS: &str = r#"
tool("lookup").description("Find a product").param("sku", "string", #{ pattern: "^SKU-[0-9]+$" })
    .requires("database_read")
    .handler(|args| if args.sku == "SKU-1" { #{ name: "brick", price: 4.5 } } else { throw tool_error(`no product ${args.sku}`) });
tool("broken").description("Always fails").handler(|args| { let x = (); x.nope() });
tool("rendezvous").description("Waits for its partner").param("me", "string").param("other", "string").requires("store")
    .handler(|args| {
        store_set("rv", args.me, true);
        for i in 0..200 { if store_get("rv", args.other) == true { return "met"; } sleep(0.01); }
        "alone"
    });
tool("solo").description("Exclusive partner").param("me", "string").param("other", "string").requires("store").exclusive()
    .handler(|args| {
        store_set("rv", args.me, true);
        for i in 0..30 { if store_get("rv", args.other) == true { return "met"; } sleep(0.01); }
        "alone"
    });
tool("slow").description("Sleeps").handler(|args| { sleep(20); "done" });
for p in ["anthropic", "openai", "ollama"] {
    agent(`shop_${p}`).provider(p).model("mock-model").system("You sell bricks.")
        .tools(["lookup", "calculator", "broken", "rendezvous", "solo", "slow"])
        .capabilities(["database_read", "store"]).max_tool_iterations(3);
}
"#;

pub fn agents() -> Scripts {
    Scripts::new(&[("shop.rhai", AGENTS)])
}

fn run(scripts: &Scripts, mock: &Mock, provider: &str, extra: &[&str]) -> std::process::Output {
    let agent = format!("shop_{provider}");
    let base = if provider == "openai" {
        format!("{}/v1", mock.url)
    } else {
        mock.url.clone()
    };
    let mut args = vec![
        agent.as_str(),
        "Price of SKU-1 times 3?",
        "--scripts",
        ".",
        "--base-url",
        &base,
    ];
    args.extend_from_slice(extra);
    ask(&args, scripts.path())
}

fn json_run(
    scripts: &Scripts,
    mock: &Mock,
    provider: &str,
    extra: &[&str],
) -> (Value, std::process::Output) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let out = run(scripts, mock, provider, &args);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| {
        panic!(
            "--json output ({e}): {}\nstderr: {}",
            stdout(&out),
            stderr(&out)
        )
    });
    (v, out)
}

const PROVIDERS: [&str; 3] = ["anthropic", "openai", "ollama"];

fn round_trip_scenario() -> Value {
    json!({"turns": [
        {"text": "Let me check. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "calculator", "args": {"expression": "4.5 * 3"}}], "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"text": "Three bricks cost 13.5.", "usage": {"input_tokens": 150, "output_tokens": 7}}
    ]})
}

#[test]
fn each_provider_runs_a_parallel_tool_round_trip_streaming_and_not() {
    let s = agents();
    for provider in PROVIDERS {
        for stream in [true, false] {
            let mock = Mock::start(&round_trip_scenario());
            let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
            let out = run(&s, &mock, provider, extra);
            let what = format!("{provider} stream={stream}");
            assert!(out.status.success(), "{what}: {}", stderr(&out));
            assert_eq!(
                stdout(&out),
                "Let me check. Three bricks cost 13.5.\n",
                "{what}"
            );
            let err = stderr(&out);
            assert!(
                err.contains("→ lookup({\"sku\":\"SKU-1\"})") && err.contains("ok"),
                "{what}: {err}"
            );
            assert!(err.contains("→ calculator("), "{what}: {err}");
            let reqs = mock.requests();
            assert_eq!(reqs.len(), 2, "{what}");
            assert_eq!(
                reqs[0]["body"]["stream"].as_bool().unwrap_or(false),
                stream,
                "{what}"
            );
            let second = reqs[1]["body"].to_string();
            assert!(
                second.contains("brick") && second.contains("13.5"),
                "{what}: results were sent back: {second}"
            );
        }
    }
}

#[test]
fn json_output_has_messages_calls_results_usage_and_stop_reason() {
    let s = agents();
    let mock = Mock::start(&round_trip_scenario());
    let (v, out) = json_run(&s, &mock, "anthropic", &[]);
    assert!(out.status.success());
    assert_eq!(v["answer"], "Three bricks cost 13.5.");
    assert_eq!(
        v["usage"],
        json!({"input_tokens": 250, "output_tokens": 27}),
        "usage is summed per run"
    );
    assert_eq!(v["stop_reason"], "end_turn");
    assert_eq!(v["rounds"], 2);
    let calls = v["tool_calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["name"], "lookup");
    assert_eq!(calls[0]["outcome"]["result"]["price"], 4.5);
    let roles: Vec<&str> = v["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["role"].as_str())
        .collect();
    assert_eq!(roles, vec!["user", "assistant", "tool", "assistant"]);
}

#[test]
fn unknown_tools_invalid_arguments_tool_errors_and_failures_go_back_as_error_results() {
    let s = agents();
    for provider in PROVIDERS {
        let mock = Mock::start(&json!({"turns": [
            {"tool_calls": [
                {"name": "nope", "args": {}},
                {"name": "lookup", "args": {"sku": "bad"}},
                {"name": "lookup", "args": {"sku": "SKU-9"}},
                {"name": "broken", "args": {}}
            ]},
            {"text": "Sorry."}
        ]}));
        let (v, out) = json_run(&s, &mock, provider, &[]);
        assert!(out.status.success(), "{provider}: {}", stderr(&out));
        let results: Vec<(String, bool)> = v["messages"][2]["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                (
                    r["content"].as_str().unwrap_or("").to_string(),
                    r["is_error"] == true,
                )
            })
            .collect();
        assert!(
            results[0]
                .0
                .starts_with("Unknown tool: nope. Available tools: lookup, calculator, broken"),
            "{provider}: {results:?}"
        );
        assert!(
            results[1].0.contains("/sku: \"bad\" does not match"),
            "{results:?}"
        );
        assert_eq!(results[2].0, "no product SKU-9");
        assert_eq!(results[3].0, "Tool failed (runtime)");
        assert!(results.iter().all(|r| r.1), "all are error results");
        let sent = mock.requests()[1]["body"].to_string();
        assert!(
            sent.contains("Unknown tool: nope") && sent.contains("Tool failed (runtime)"),
            "{provider}: {sent}"
        );
        assert!(
            !sent.contains("nope()") && !sent.contains("shop.rhai"),
            "no failure detail reaches the model: {sent}"
        );
        if provider == "anthropic" {
            assert!(sent.contains("\"is_error\":true"), "{sent}");
        }
    }
}

#[test]
fn openai_invalid_json_arguments_become_an_error_result() {
    let s = agents();
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "calculator", "raw_arguments": "{\"expression\": \"1+"}]},
        {"text": "ok"}
    ]}));
    let (v, out) = json_run(&s, &mock, "openai", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let content = v["messages"][2]["results"][0]["content"]
        .as_str()
        .expect("content");
    assert!(
        content.starts_with(
            "Invalid arguments for tool \"calculator\": not valid JSON (EOF while parsing"
        ),
        "{content}"
    );
    let sent = &mock.requests()[1]["body"]["messages"];
    assert_eq!(
        sent[2]["tool_calls"][0]["function"]["arguments"], "{\"expression\": \"1+",
        "the raw arguments are echoed back as sent"
    );
}

#[test]
fn a_capability_error_stops_the_run() {
    let s = agents();
    let mock = Mock::start(
        &json!({"turns": [{"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]}, {"text": "never"}]}),
    );
    let (v, out) = json_run(&s, &mock, "openai", &["--caps", "store"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("CapabilityError: Tool \"lookup\" requires capabilities [database_read] but agent \"shop_openai\" only has [store]"), "{}", stderr(&out));
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("CapabilityError"))
    );
    assert_eq!(mock.requests().len(), 1, "no further model request");
}

#[test]
fn max_tool_iterations_raises_tool_loop_error_with_the_transcript() {
    let s = agents();
    let mock = Mock::start(
        &json!({"loop": true, "turns": [{"tool_calls": [{"name": "calculator", "args": {"expression": "1+1"}}]}]}),
    );
    let (v, out) = json_run(&s, &mock, "ollama", &["--max-iterations", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("ToolLoopError: the model asked for tools in more than 2 rounds"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        v["tool_calls"].as_array().map(Vec::len),
        Some(2),
        "transcript so far"
    );
    assert_eq!(v["rounds"], 3);
}

#[test]
fn several_calls_run_concurrently_and_exclusive_ones_alone_with_results_in_call_order() {
    let s = agents();
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "rendezvous", "args": {"me": "a", "other": "b"}}, {"name": "rendezvous", "args": {"me": "b", "other": "a"}}]},
        {"tool_calls": [{"name": "solo", "args": {"me": "c", "other": "d"}}, {"name": "solo", "args": {"me": "d", "other": "zz"}}]},
        {"text": "done"}
    ]}));
    let (v, out) = json_run(&s, &mock, "anthropic", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let results = |i: usize| -> Vec<String> {
        v["messages"][i]["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["content"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        results(2),
        vec!["met", "met"],
        "both calls ran at the same time"
    );
    assert_eq!(
        results(4),
        vec!["alone", "alone"],
        "exclusive calls never overlap"
    );
    let ids: Vec<String> = v["messages"][2]["results"]
        .as_array()
        .expect("r")
        .iter()
        .map(|r| r["call_id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        ids,
        vec!["toolu_mock_0_0", "toolu_mock_0_1"],
        "results keep call order"
    );
}

#[test]
fn deadline_and_ctrl_c_stop_the_run() {
    let s = agents();
    let mock = Mock::start(&json!({"turns": [{"delay_ms": 10000, "text": "late"}]}));
    let out = run(&s, &mock, "anthropic", &["--timeout", "0.5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("the run's deadline passed"),
        "{}",
        stderr(&out)
    );

    let mock = Mock::start(
        &json!({"turns": [{"tool_calls": [{"name": "slow", "args": {}}]}, {"text": "never"}]}),
    );
    let child = spawn_ask(
        &[
            "shop_openai",
            "go",
            "--scripts",
            ".",
            "--base-url",
            &format!("{}/v1", mock.url),
        ],
        s.path(),
    );
    mock.wait_for_requests(1);
    std::thread::sleep(std::time::Duration::from_millis(300));
    // The lone call runs in place on the run's own thread (kiln ask has one): Ctrl-C must
    // still reach it, long before its 20 s sleep is over.
    let sent = std::time::Instant::now();
    signal(child.id(), "INT");
    let out = child.wait_with_output().expect("wait");
    assert!(
        sent.elapsed() < std::time::Duration::from_secs(10),
        "Ctrl-C waited {:?} for the tool",
        sent.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("error: cancelled"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "the slow tool was stopped, no further request"
    );
}

#[test]
fn provider_faults_are_retried_then_reported_clearly() {
    let s = agents();
    let mock = Mock::start(&json!({"turns": [
        {"fault": {"status": 429, "retry_after_ms": 50}},
        {"fault": {"status": 500}},
        {"fault": {"status": 529, "retry_after": 0}},
        {"text": "finally"}
    ]}));
    let out = run(&s, &mock, "anthropic", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "finally\n");
    assert_eq!(mock.requests().len(), 4);

    let mock = Mock::start(
        &json!({"loop": true, "turns": [{"fault": {"status": 503, "retry_after": 0, "message": "busy"}}]}),
    );
    let out = run(&s, &mock, "openai", &["--retries", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("error: openai: HTTP 503: server_error: busy"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 3, "first try + 2 retries");

    let mock = Mock::start(
        &json!({"turns": [{"fault": {"status": 500, "should_retry": false}}, {"text": "x"}]}),
    );
    let out = run(&s, &mock, "ollama", &[]);
    assert!(
        stderr(&out).contains("ollama: HTTP 500: mock fault 500"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "x-should-retry: false is honoured"
    );
}

#[test]
fn malformed_replies_truncation_and_stream_errors_end_in_clear_errors() {
    let s = agents();
    let cases: &[(&str, Value, &[&str], &str)] = &[
        (
            "anthropic",
            json!({"malformed": true}),
            &["--no-stream"],
            "anthropic: malformed reply: reply is not JSON",
        ),
        (
            "openai",
            json!({"malformed": true}),
            &[],
            "openai: malformed reply: bad stream chunk",
        ),
        (
            "ollama",
            json!({"malformed": true}),
            &[],
            "ollama: malformed reply",
        ),
        (
            "anthropic",
            json!({"truncate": true, "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]}),
            &[],
            "anthropic: the reply hit max_tokens in the middle of tool call \"lookup\"; the truncated call was not executed",
        ),
        (
            "openai",
            json!({"truncate": true, "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]}),
            &[],
            "openai: the reply hit max_tokens in the middle of tool call \"lookup\"",
        ),
        (
            "ollama",
            json!({"truncate": true, "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]}),
            &["--no-stream"],
            "ollama: the reply hit max_tokens",
        ),
        (
            "anthropic",
            json!({"stream_error": "Overloaded"}),
            &[],
            "anthropic: error in stream: overloaded_error: Overloaded",
        ),
        (
            "openai",
            json!({"stream_error": "boom"}),
            &[],
            "openai: error in stream: server_error: boom",
        ),
        (
            "ollama",
            json!({"stream_error": "model crashed"}),
            &[],
            "ollama: error in stream: model crashed",
        ),
        (
            "anthropic",
            json!({"cut": true, "text": "a long reply that is cut in the middle"}),
            &[],
            "anthropic: request failed: the stream ended before message_stop",
        ),
        (
            "openai",
            json!({"cut": true, "text": "a long reply that is cut in the middle"}),
            &[],
            "openai: request failed: the stream ended before a finish_reason",
        ),
        (
            "ollama",
            json!({"cut": true, "text": "a long reply that is cut in the middle"}),
            &[],
            "ollama: request failed: the stream ended before done",
        ),
    ];
    for (provider, turn, extra, want) in cases {
        let mock = Mock::start(&json!({"turns": [turn]}));
        let out = run(&s, &mock, provider, extra);
        assert_eq!(out.status.code(), Some(1), "{provider} {turn}");
        assert!(
            stderr(&out).contains(want),
            "{provider} {turn}: wanted {want:?} in {}",
            stderr(&out)
        );
        assert!(
            !stderr(&out).contains("→ lookup"),
            "a truncated call is never executed"
        );
        assert!(!stderr(&out).contains("panicked"));
    }
}

#[test]
fn a_missing_key_says_which_variable_to_set_and_keys_never_leak() {
    let s = agents();
    let out = std::process::Command::new(kiln_bin())
        .args(["ask", "shop_anthropic", "hi", "--scripts", "."])
        .current_dir(s.path())
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("anthropic: no API key: set the ANTHROPIC_API_KEY environment variable"),
        "{}",
        stderr(&out)
    );
    for provider in ["anthropic", "openai"] {
        let mock =
            Mock::start(&json!({"turns": [{"fault": {"status": 401, "message": "bad key"}}]}));
        let out = run(&s, &mock, provider, &["-vv", "--json"]);
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains(TEST_KEY), "{provider}: key leaked: {all}");
        assert!(
            !mock.requests()[0].to_string().contains("SECRET"),
            "the mock redacts too"
        );
    }
}

#[test]
fn each_turn_sees_the_registry_as_it_is_then() {
    let probe = |v: &str| {
        format!(
            "tool(\"probe\").description(\"probe {v}\").handler(|a| \"{v}\");\nagent(\"snap\").provider(\"anthropic\").model(\"m\").tools([\"probe\"]);"
        )
    };
    let s = Scripts::new(&[("snap.rhai", &probe("v1"))]);
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "probe", "args": {}}]},
        {"delay_ms": 1500, "tool_calls": [{"name": "probe", "args": {}}]},
        {"tool_calls": [{"name": "probe", "args": {}}]},
        {"text": "done"}
    ]}));
    let child = spawn_ask(
        &[
            "snap",
            "go",
            "--watch",
            "--json",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
        ],
        s.path(),
    );
    mock.wait_for_requests(2);
    std::fs::write(s.path().join("snap.rhai"), probe("v2")).expect("edit while the model thinks");
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let results: Vec<&str> = v["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter_map(|c| c["outcome"]["result"].as_str())
        .collect();
    // Turn 2 was asked with the v1 schema, so v1 code runs its call even though the file
    // changed while the model thought; turn 3 sees (and runs) v2.
    assert_eq!(results, vec!["v1", "v1", "v2"]);
    let reqs = mock.requests();
    assert_eq!(reqs[1]["body"]["tools"][0]["description"], "probe v1");
    assert_eq!(
        reqs[2]["body"]["tools"][0]["description"], "probe v2",
        "the next turn saw the new schema"
    );
}

#[test]
fn a_request_that_times_out_is_retried_then_reported() {
    let s = agents();
    let mock = Mock::start(&json!({"loop": true, "turns": [{"delay_ms": 3000, "text": "late"}]}));
    let out = run(
        &s,
        &mock,
        "openai",
        &["--request-timeout", "0.3", "--retries", "1"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("openai: request failed: timed out"),
        "{}",
        stderr(&out)
    );
    assert_eq!(mock.requests().len(), 2, "one retry");
}
