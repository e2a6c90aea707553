//! Conformance with the official specs (see SOURCES.md): what the real binary sends validates.
//! The wire-level replays of recorded exchanges are unit tests in src/provider/conformance.rs.

use crate::common::*;
use crate::scripts::spec::{assert_openai, openai_validator};
use serde_json::json;

#[test]
fn every_request_kiln_sends_to_openai_validates_against_create_chat_completion_request() {
    let s = crate::scripts::agent_loop::agents();
    let validator = openai_validator("CreateChatCompletionRequest");
    let mut checked = 0;
    for stream in [true, false] {
        let mock = Mock::start(&json!({"turns": [
            {"text": "Checking. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "calculator", "raw_arguments": "{oops"}]},
            {"tool_calls": [{"name": "broken", "args": {}}]},
            {"text": "Done."}
        ]}));
        let base = format!("{}/v1", mock.url);
        let mut args = vec![
            "shop_openai",
            "hi",
            "--scripts",
            ".",
            "--base-url",
            base.as_str(),
        ];
        if !stream {
            args.push("--no-stream");
        }
        let out = ask(&args, s.path());
        assert!(out.status.success(), "{}", stderr(&out));
        for r in mock.requests() {
            assert_openai("CreateChatCompletionRequest", &validator, &r["body"]);
            checked += 1;
        }
    }
    assert_eq!(checked, 6);
    assert!(
        !validator.is_valid(&json!({"model": "x", "messages": [{"role": "tool", "content": "x"}]})),
        "the validator can fail"
    );
}
