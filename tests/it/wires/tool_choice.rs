//! `kiln ask --tool-choice` and `--no-parallel-tool-calls` end to end: the real binary against
//! `kiln mock` on each wire. The first request carries the wire's forced choice, the one after
//! the tool ran leaves the choice to the model (so it answers); the mock refuses a forced tool
//! that is not offered, as the services do. Ollama, which has no `tool_choice`, is offered
//! only the chosen tool.

use crate::common::*;
use crate::wires::bedrock::{ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, signing_mock};
use serde_json::{Value, json};

const AGENTS: &str = r#"
tool("lookup").description("Find a product").param("sku", "string", #{ pattern: "^SKU-[0-9]+$" })
    .handler(|args| #{ name: "brick", price: 4.5 });
agent("openai").provider("openai").model("gpt-5-mini").tools(["lookup", "calculator"]);
agent("anthropic").provider("anthropic").model("claude-haiku-4-5").tools(["lookup", "calculator"]);
agent("openai-responses").provider("openai-responses").model("gpt-5-mini").tools(["lookup", "calculator"]);
agent("gemini").provider("gemini").model("gemini-2.5-flash").tools(["lookup", "calculator"]);
agent("bedrock").provider("bedrock").model("anthropic.claude-haiku-4-5-20251001-v1:0").tools(["lookup", "calculator"]);
agent("ollama").provider("ollama").model("llama3.2").tools(["lookup", "calculator"]);
"#;

fn scenario() -> Value {
    json!({"turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "A brick costs 4.5."}
    ]})
}

/// `kiln ask WIRE ... EXTRA` against `mock`, with each wire's credentials and base URL.
fn ask_on(s: &Scripts, mock: &Mock, wire: &str, extra: &[&str]) -> std::process::Output {
    let base = match wire {
        "openai" | "openai-responses" => format!("{}/v1", mock.url),
        _ => mock.url.clone(),
    };
    let mut args = vec![wire, "Price of SKU-1?", "--json", "--scripts", "."];
    args.extend_from_slice(&["--base-url", &base]);
    args.extend_from_slice(extra);
    ask_command(&args, s.path())
        .env("GEMINI_API_KEY", TEST_KEY)
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GOOGLE_GEMINI_BASE_URL")
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("AWS_SESSION_TOKEN", SESSION_TOKEN)
        .env("AWS_REGION", "us-west-2")
        .env_remove("AWS_BEARER_TOKEN_BEDROCK")
        .env_remove("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
        .output()
        .expect("run kiln ask")
}

/// The tool choice of a request body on `wire`, as the wire spells it (null: none sent).
fn choice(wire: &str, body: &Value) -> Value {
    match wire {
        "gemini" => body["toolConfig"]["functionCallingConfig"].clone(),
        "bedrock" => body["toolConfig"]["toolChoice"].clone(),
        _ => body["tool_choice"].clone(),
    }
}

#[test]
fn a_forced_tool_is_asked_for_first_and_left_to_the_model_after_it_ran() {
    let s = Scripts::new(&[("agents.rhai", AGENTS)]);
    let forced = [
        (
            "openai",
            json!({"type": "function", "function": {"name": "lookup"}}),
            json!(null),
        ),
        (
            "anthropic",
            json!({"type": "tool", "name": "lookup", "disable_parallel_tool_use": true}),
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        ),
        (
            "openai-responses",
            json!({"type": "function", "name": "lookup"}),
            json!(null),
        ),
        (
            "gemini",
            json!({"mode": "ANY", "allowedFunctionNames": ["lookup"]}),
            json!({"mode": "AUTO"}),
        ),
        ("bedrock", json!({"tool": {"name": "lookup"}}), json!(null)),
    ];
    for (wire, first, then) in forced {
        let mock = signing_mock(&scenario());
        let extra = ["--tool-choice", "lookup", "--no-parallel-tool-calls"];
        let out = ask_on(&s, &mock, wire, &extra);
        assert!(out.status.success(), "{wire}: {}", stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).expect("report");
        assert_eq!(report["answer"], "A brick costs 4.5.", "{wire}");
        assert_eq!(report["tool_calls"][0]["name"], "lookup", "{wire}");
        let requests = mock.requests();
        assert_eq!(requests.len(), 2, "{wire}");
        let (one, two) = (&requests[0]["body"], &requests[1]["body"]);
        assert_eq!(choice(wire, one), first, "{wire}: {one}");
        assert_eq!(choice(wire, two), then, "{wire}: {two}");
        // One call per reply, on every request of the wires that can say it.
        if matches!(wire, "openai" | "openai-responses") {
            assert_eq!(
                (&one["parallel_tool_calls"], &two["parallel_tool_calls"]),
                (&json!(false), &json!(false)),
                "{wire}"
            );
        }
    }
}

#[test]
fn none_offers_nothing_to_call_and_a_tool_not_offered_is_the_services_400() {
    let s = Scripts::new(&[("agents.rhai", AGENTS)]);
    let answer = json!({"turns": [{"text": "About 4.5."}]});
    for (wire, sent) in [
        ("openai", json!("none")),
        ("anthropic", json!({"type": "none"})),
        ("gemini", json!({"mode": "NONE"})),
    ] {
        let mock = signing_mock(&answer);
        let out = ask_on(&s, &mock, wire, &["--tool-choice", "none"]);
        assert!(out.status.success(), "{wire}: {}", stderr(&out));
        assert_eq!(choice(wire, &mock.requests()[0]["body"]), sent, "{wire}");
    }
    // Converse has no "none": the tools are left out.
    let mock = signing_mock(&answer);
    let out = ask_on(&s, &mock, "bedrock", &["--tool-choice", "none"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(mock.requests()[0]["body"].get("toolConfig").is_none());
    // A name the agent does not offer: the service's refusal, named, and a failed run.
    for (wire, says) in [
        ("openai", "no function named 'nope'"),
        ("anthropic", "Tool 'nope' not found in provided tools"),
        ("openai-responses", "no function named 'nope'"),
        ("gemini", "allowed_function_names[0]"),
        ("bedrock", "the tool nope is not in toolConfig.tools"),
    ] {
        let mock = signing_mock(&answer);
        let out = ask_on(
            &s,
            &mock,
            wire,
            &["--tool-choice", "nope", "--retries", "0"],
        );
        assert!(!out.status.success(), "{wire}");
        let err = stderr(&out);
        assert!(err.contains("400") && err.contains(says), "{wire}: {err}");
    }
}

#[test]
fn the_flags_are_in_the_help_and_an_empty_choice_is_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let help = stdout(&kiln(&["ask", "--help"], dir.path()));
    assert!(
        help.contains("--tool-choice <CHOICE>") && help.contains("--no-parallel-tool-calls"),
        "{help}"
    );
    let out = kiln(&["ask", "a", "p", "--tool-choice", ""], dir.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("expected auto, none, required or a tool's name"));
}

/// The names of the tools a request offers on Ollama's wire.
fn offered(body: &Value) -> Vec<String> {
    (body["tools"].as_array().into_iter().flatten())
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn ollama_has_no_tool_choice_so_the_first_request_offers_only_the_choice() {
    let s = Scripts::new(&[("agents.rhai", AGENTS)]);
    let mock = signing_mock(&scenario());
    let out = ask_on(&s, &mock, "ollama", &["--tool-choice", "lookup"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(offered(&requests[0]["body"]), ["lookup"]);
    assert_eq!(offered(&requests[1]["body"]), ["lookup", "calculator"]);
    assert!(requests[0]["body"].get("tool_choice").is_none());
    let mock = signing_mock(&json!({"turns": [{"text": "About 4.5."}]}));
    let out = ask_on(&s, &mock, "ollama", &["--tool-choice", "none"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(offered(&mock.requests()[0]["body"]).is_empty());
}
