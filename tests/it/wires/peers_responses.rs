//! The official OpenAI Python SDK drives `kiln mock`'s Responses API (`client.responses.create`,
//! whole and `stream=True`, a tool round trip with a reasoning item sent back) and Azure
//! OpenAI's routes (`AzureOpenAI`: chat and responses); then `kiln ask` runs the same scenario,
//! so kiln and the SDK are held to one fake. Ignored by default (it needs `pip install openai`);
//! `.ci/run` installs the SDK and runs it with `cargo test --test it peers -- --ignored`.

use crate::common::*;
use serde_json::{Value, json};

const THOUGHT: &str = "Two lookups, one per SKU.";

/// The scenario the SDK and kiln both go through (kiln takes the first two turns).
fn scenario() -> Value {
    json!({"turns": [
        {"reasoning": THOUGHT, "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "lookup", "args": {"sku": "SKU-2"}}],
         "usage": {"input_tokens": 30, "output_tokens": 20, "reasoning_tokens": 12}},
        {"text": "Both cost 4.50."},
        {"text": "Let me look. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-3", "note": "a longer argument to split"}}]},
        {"text": "It costs 4.50."},
        {"text": "Hello from Azure."},
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-4"}}]}
    ]})
}

#[test]
#[ignore = "needs the OpenAI Python SDK: pip install openai (run by .ci/run)"]
fn peers_the_openai_sdk_drives_the_mocks_responses_api_and_azure_routes() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "import openai"])
        .output();
    assert!(
        sdk.is_ok_and(|o| o.status.success()),
        "the OpenAI Python SDK is missing: pip install openai"
    );
    let mock = Mock::start(&scenario());
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/responses_sdk.py"))
        .arg(&mock.url)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the SDK rejected kiln mock:\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(
        v["calls"],
        json!([["lookup", {"sku": "SKU-1"}], ["lookup", {"sku": "SKU-2"}]])
    );
    assert_eq!(
        v["output_types"],
        json!(["reasoning", "function_call", "function_call"])
    );
    let encrypted = v["encrypted"][0].as_str().expect("encrypted_content");
    assert!(encrypted.starts_with("gAAAAB-kiln-mock-0-"), "{encrypted}");
    assert_eq!(v["usage"], json!([30, 20, 12]));
    assert_eq!(v["status"], "completed");
    assert_eq!(v["stream_text"], "Both cost 4.50.");
    assert_eq!(v["stream_final_text"], "Both cost 4.50.");
    for ev in [
        "response.created",
        "response.output_text.delta",
        "response.output_item.done",
        "response.completed",
    ] {
        assert!(
            v["stream_events"]
                .as_array()
                .is_some_and(|e| e.contains(&json!(ev))),
            "{ev}: {v}"
        );
    }
    let sku3 = json!({"sku": "SKU-3", "note": "a longer argument to split"});
    assert_eq!(v["stream_call"], json!(["lookup", sku3, sku3]));
    assert_eq!(v["after_call"], "It costs 4.50.");
    assert_eq!(v["azure_chat"], "Hello from Azure.");
    assert_eq!(
        v["azure_responses_calls"],
        json!([["lookup", {"sku": "SKU-4"}]])
    );
    assert_eq!(v["orphan"][0], 400);
    assert!(
        v["orphan"][1]
            .as_str()
            .is_some_and(|m| m.contains("No tool call found")),
        "{v}"
    );
    // The mock accepted the SDK's requests: the reasoning item went back with its content.
    let requests = mock.requests();
    let input = &requests[1]["body"]["input"];
    assert_eq!(input[1]["type"], "reasoning");
    assert_eq!(input[1]["encrypted_content"], encrypted);
    let paths: Vec<&str> = requests.iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/responses",
            "/v1/responses",
            "/v1/responses",
            "/v1/responses",
            "/openai/deployments/{deployment}/chat/completions",
            "/openai/responses",
            "/v1/responses"
        ]
    );
    assert_eq!(requests[4]["headers"]["api-key"], "<redacted>");

    // kiln on the same scenario: the same calls, the reasoning item sent back the same way.
    let scripts = Scripts::new(&[(
        "shop.rhai",
        r#"
tool("lookup").description("Find").param("sku", "string").handler(|args| #{ price: 4.5 });
agent("shop").provider("openai-responses").model("m").tools(["lookup"]);
"#,
    )]);
    for stream in [true, false] {
        let mock = Mock::start(&scenario());
        let base = format!("{}/v1", mock.url);
        let mut args = vec![
            "shop",
            "Price of SKU-1 and SKU-2?",
            "--scripts",
            ".",
            "--base-url",
            &base,
            "--json",
        ];
        if !stream {
            args.push("--no-stream");
        }
        let out = ask(&args, scripts.path());
        assert!(out.status.success(), "{}", stderr(&out));
        let report: Value = serde_json::from_str(&stdout(&out)).expect("report");
        assert_eq!(report["answer"], "Both cost 4.50.");
        let requests = mock.requests();
        let input = &requests[1]["body"]["input"];
        assert_eq!(input[1]["type"], "reasoning");
        assert_eq!(
            input[1]["encrypted_content"], encrypted,
            "kiln sends back what the SDK sent back"
        );
        assert_eq!(input[2]["call_id"], "call_mock_0_0");
        assert_eq!(input[4]["type"], "function_call_output");
    }
}
