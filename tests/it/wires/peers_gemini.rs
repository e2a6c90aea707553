//! A real peer on the Gemini wire: Google's google-genai Python SDK drives `kiln mock`, then
//! kiln runs the same scenario. Ignored by default (it needs `pip install google-genai`);
//! `.ci/run` installs the pinned SDK and runs it with `cargo test --test it peers -- --ignored`.

use crate::common::*;
use serde_json::{Value, json};

/// A call round trip, then a streamed call that fails, then its answer.
fn scenario() -> Value {
    json!({"turns": [
        {"tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}], "usage": {"input_tokens": 30, "output_tokens": 6}},
        {"text": "It costs 4.50."},
        {"text": "Let me look. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-3"}}]},
        {"text": "There is no SKU-3."}
    ]})
}

const MODEL: &str = "gemini-3-flash-preview";

#[test]
#[ignore = "needs the Python SDK: pip install google-genai (run by .ci/run)"]
fn peers_google_genai_sdk_and_kiln_agree_on_kiln_mocks_gemini() {
    let sdk = std::process::Command::new("python3")
        .args(["-c", "import google.genai"])
        .output();
    assert!(
        sdk.is_ok_and(|o| o.status.success()),
        "the Python SDK is missing: pip install google-genai"
    );
    let mock = Mock::start(&scenario());
    let out = std::process::Command::new("python3")
        .arg(repo().join("tests/peers/gemini_sdk.py"))
        .args([&mock.url, MODEL])
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_GEMINI_BASE_URL")
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "google-genai rejected kiln mock (or the mock the SDK):\n{}",
        stderr(&out)
    );
    let v: Value = serde_json::from_str(stdout(&out).trim()).expect("json from the SDK script");
    assert_eq!(v["calls"], json!([["lookup", {"sku": "SKU-1"}]]));
    assert_eq!(v["finish"], "STOP");
    assert_eq!(
        v["signed"],
        json!([true]),
        "the call part carries its signature"
    );
    assert_eq!(v["usage"], json!([30, 6]));
    assert_eq!(v["text"], "It costs 4.50.");
    assert_eq!(v["stream_text"], "Let me look. ");
    assert_eq!(v["stream_calls"], json!([["lookup", {"sku": "SKU-3"}]]));
    assert_eq!(v["stream_finish"], "STOP");
    assert_eq!(v["stream_answer"], "There is no SKU-3.");
    // The SDK's requests passed the mock's checks (Gemini 3's signature check included) on
    // the SDK's default version and on v1beta, in the SDK's spelling of each field.
    let reqs = mock.requests();
    let paths: Vec<&str> = reqs.iter().filter_map(|r| r["path"].as_str()).collect();
    assert_eq!(
        paths,
        [
            format!("/v1/models/{MODEL}:generateContent"),
            format!("/v1/models/{MODEL}:generateContent"),
            format!("/v1beta/models/{MODEL}:streamGenerateContent"),
            format!("/v1beta/models/{MODEL}:streamGenerateContent"),
        ]
    );
    let decl = &reqs[0]["body"]["tools"][0]["functionDeclarations"][0];
    assert!(
        decl.get("parameters_json_schema").is_some() || decl.get("parametersJsonSchema").is_some(),
        "{decl}"
    );

    // kiln on the same scenario's first round trip, streamed and not: the same answer.
    let s = Scripts::new(&[(
        "shop.rhai",
        r#"tool("lookup").description("Find a product").param("sku", "string")
    .handler(|args| #{ price: 4.5 });
agent("shop").provider("gemini").model("gemini-3-flash-preview").tools(["lookup"]);"#,
    )]);
    for extra in [&[][..], &["--no-stream"][..]] {
        let mock = Mock::start(&scenario());
        let mut args = vec![
            "shop",
            "Price of SKU-1?",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
        ];
        args.extend_from_slice(extra);
        let out = ask_command(&args, s.path())
            .env("GEMINI_API_KEY", TEST_KEY)
            .env_remove("GOOGLE_GEMINI_BASE_URL")
            .output()
            .expect("kiln ask");
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "It costs 4.50.\n", "{extra:?}");
        assert_eq!(mock.requests().len(), 2);
    }
}
