//! boto3 (`bedrock-runtime`) drives `kiln mock`'s Bedrock Converse: botocore's own SigV4
//! signatures pass the mock's verification, the mock's replies and event streams (CRCs and
//! all) parse in the SDK, its refusals read as AWS's; then kiln runs the same scenario.
//! Ignored by default (needs `pip install boto3`); `.ci/run` installs it pinned and runs it
//! with `cargo test --test it peers -- --ignored`.

use crate::common::*;
use crate::wires::bedrock::{ACCESS_KEY, MODEL, SECRET_KEY, SESSION_TOKEN, signing_mock};
use serde_json::{Value, json};

fn scenario() -> Value {
    json!({"turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]},
        {"text": "It costs 4.50.", "usage": {"input_tokens": 30, "output_tokens": 6}},
        {"text": "Let me look. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-3", "note": "a longer argument to split"}}]},
        {"text": "Done.", "usage": {"input_tokens": 40, "output_tokens": 2}}
    ]})
}

#[test]
#[ignore = "needs boto3: pip install boto3 (run by .ci/run)"]
fn peers_boto3_bedrock_runtime_accepts_kiln_mock_and_kiln_runs_the_same_scenario() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "import boto3"])
        .output();
    assert!(
        sdk.is_ok_and(|o| o.status.success()),
        "boto3 is missing: pip install boto3"
    );
    let mock = signing_mock(&scenario());
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/bedrock_check.py"))
        .args([&mock.url, ACCESS_KEY, SECRET_KEY, SESSION_TOKEN, MODEL])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "boto3 against kiln mock:\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(v["stop"], "tool_use");
    assert_eq!(v["calls"], json!([["lookup", {"sku": "SKU-1"}]]));
    assert_eq!(v["text"], "It costs 4.50.");
    assert_eq!(v["usage"], json!([30, 6]));
    assert_eq!(v["stream_text"], "Let me look. ");
    assert_eq!(
        v["stream_calls"],
        json!([["lookup", {"sku": "SKU-3", "note": "a longer argument to split"}]])
    );
    assert_eq!(v["stream_stop"], "tool_use");
    assert_eq!(v["stream_answer"], json!(["Done.", "end_turn", 2]));
    assert_eq!(v["wrong_secret"][0], 403);
    assert_eq!(v["wrong_secret"][1], "InvalidSignatureException");
    assert!(
        v["wrong_secret"][2]
            .as_str()
            .is_some_and(|m| m.starts_with("The request signature we calculated does not match")),
        "{v}"
    );
    assert_eq!(v["stray_result"][0], "ValidationException");
    // Every SDK request was signed by botocore and verified by the mock; the model id went
    // percent-encoded in the path, as kiln sends it.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6);
    assert_eq!(
        reqs[0]["path"],
        "/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/converse"
    );
    assert_eq!(reqs[2]["route"], "converse-stream");

    // kiln on the same scenario: the tool round trip, whole and streamed.
    let s = Scripts::new(&[(
        "shop.rhai",
        r#"tool("lookup").description("Find a product").param("sku", "string")
            .handler(|args| #{ price: 4.5 });
        agent("shop").provider("bedrock").model("anthropic.claude-haiku-4-5-20251001-v1:0").tools(["lookup"]);"#,
    )]);
    for extra in [&["--no-stream"][..], &[][..]] {
        let mock = signing_mock(&scenario());
        let args = [
            &[
                "shop",
                "Price of SKU-1?",
                "--scripts",
                ".",
                "--base-url",
                &mock.url,
            ],
            extra,
        ]
        .concat();
        let out = ask_command(&args, s.path())
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .env("AWS_SESSION_TOKEN", SESSION_TOKEN)
            .env_remove("AWS_BEARER_TOKEN_BEDROCK")
            .output()
            .expect("kiln ask");
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "It costs 4.50.\n", "{extra:?}");
        assert_eq!(mock.requests().len(), 2);
    }
}
