//! Real peers: the official OpenAI and Anthropic Python SDKs drive `kiln mock` over HTTP.
//! Ignored by default (they need `pip install anthropic openai`); `.ci/run` installs the SDKs
//! and runs them with `cargo test --test it peers -- --ignored`, where missing SDKs fail.

use crate::common::*;
use serde_json::{Value, json};

#[test]
#[ignore = "needs the Python SDKs: pip install anthropic openai (run by .ci/run)"]
fn the_official_sdks_parse_what_kiln_mock_serves() {
    let sdks = std::process::Command::new("python3")
        .args(["-c", "import anthropic, openai"])
        .output();
    assert!(
        sdks.is_ok_and(|o| o.status.success()),
        "the Python SDKs are missing: pip install anthropic openai"
    );
    let mock = Mock::start(&json!({"turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "lookup", "args": {"sku": "SKU-2"}}]},
        {"text": "Both cost 4.50.", "usage": {"input_tokens": 30, "output_tokens": 6}},
        {"text": "Let me look. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-3", "note": "a longer argument to split"}}]},
        {"text": "It costs 4.50."},
        {"fault": {"status": 429, "retry_after": 0}}
    ]}));
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/sdk_check.py"))
        .arg(&mock.url)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the SDKs rejected kiln mock:\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(
        v["openai_calls"],
        json!([["lookup", {"sku": "SKU-1"}], ["lookup", {"sku": "SKU-2"}]])
    );
    assert_eq!(v["openai_finish"], "tool_calls");
    assert_eq!(v["openai_stream_text"], "Both cost 4.50.");
    assert_eq!(v["openai_stream_usage"], 6);
    assert_eq!(v["anthropic_stream_blocks"], json!(["text", "tool_use"]));
    assert_eq!(
        v["anthropic_stream_input"],
        json!([{"sku": "SKU-3", "note": "a longer argument to split"}])
    );
    assert_eq!(v["anthropic_stop"], "tool_use");
    assert_eq!(v["anthropic_text"], "It costs 4.50.");
    assert_eq!(v["anthropic_429"], 429);
    // The SDKs' own requests passed the mock's protocol checks (tool results paired with calls).
    assert_eq!(mock.requests().len(), 5);
}
