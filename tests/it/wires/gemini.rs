//! The Gemini wire end to end: the real `kiln ask` against `kiln mock` answering as Gemini
//! (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse`).

use crate::common::*;
use serde_json::{Value, json};

const AGENTS: &str = r#"
tool("lookup").description("Find a product").param("sku", "string", #{ pattern: "^SKU-[0-9]+$" })
    .requires("database_read")
    .handler(|args| if args.sku == "SKU-1" { #{ name: "brick", price: 4.5 } } else { throw tool_error(`no product ${args.sku}`) });
agent("shop").provider("gemini").model("gemini-2.5-flash").system("You sell bricks.")
    .tools(["lookup", "calculator"]).capabilities(["database_read"]).max_iterations(3);
agent("shop3").provider("gemini").model("gemini-3-flash-preview").system("You sell bricks.")
    .tools(["lookup", "calculator"]).capabilities(["database_read"]).max_iterations(3);
"#;

fn run(scripts: &Scripts, mock: &Mock, agent: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        agent,
        "Price of SKU-1 times 3?",
        "--scripts",
        ".",
        "--base-url",
        &mock.url,
    ];
    args.extend_from_slice(extra);
    ask_command(&args, scripts.path())
        .env("GEMINI_API_KEY", TEST_KEY)
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GOOGLE_GEMINI_BASE_URL")
        .output()
        .expect("run kiln ask")
}

fn round_trip() -> Value {
    json!({"turns": [
        {"text": "Let me check. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "calculator", "args": {"expression": "4.5 * 3"}}], "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"text": "Three bricks cost 13.5.", "usage": {"input_tokens": 150, "output_tokens": 7}}
    ]})
}

/// The function response parts of a recorded request's last content.
fn responses(request: &Value) -> Vec<Value> {
    let contents = request["body"]["contents"].as_array().expect("contents");
    let last = contents.last().expect("a content");
    assert_eq!(last["role"], "user");
    last["parts"]
        .as_array()
        .expect("parts")
        .iter()
        .map(|p| p["functionResponse"].clone())
        .collect()
}

#[test]
fn gemini_runs_a_parallel_tool_round_trip_streamed_and_not() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    for stream in [true, false] {
        let mock = Mock::start(&round_trip());
        let extra: &[&str] = if stream {
            &["--json"]
        } else {
            &["--json", "--no-stream"]
        };
        let out = run(&s, &mock, "shop", extra);
        let what = format!("stream={stream}");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let report: Value = serde_json::from_str(&stdout(&out)).expect("report");
        assert_eq!(report["answer"], "Three bricks cost 13.5.", "{what}");
        assert_eq!(
            report["usage"],
            json!({"input_tokens": 250, "output_tokens": 27})
        );
        assert_eq!(report["tool_calls"][0]["outcome"]["result"]["price"], 4.5);
        assert_eq!(report["tool_calls"][1]["outcome"]["result"], 13.5);
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 2, "{what}");
        let method = if stream {
            "streamGenerateContent"
        } else {
            "generateContent"
        };
        assert_eq!(
            reqs[0]["path"],
            format!("/v1beta/models/gemini-2.5-flash:{method}"),
            "{what}"
        );
        assert_eq!(reqs[0]["headers"]["x-goog-api-key"], "<redacted>");
        let first = &reqs[0]["body"];
        assert_eq!(
            first["systemInstruction"]["parts"][0]["text"],
            "You sell bricks."
        );
        let decls = &first["tools"][0]["functionDeclarations"];
        let lookup = decls
            .as_array()
            .expect("declarations")
            .iter()
            .find(|d| d["name"] == "lookup")
            .expect("lookup declared");
        assert_eq!(
            lookup["parametersJsonSchema"]["properties"]["sku"]["pattern"],
            "^SKU-[0-9]+$"
        );
        // Both results went back, in call order, answering the calls by name.
        let sent = responses(&reqs[1]);
        assert_eq!(sent[0]["name"], "lookup");
        assert_eq!(sent[0]["response"], json!({"name": "brick", "price": 4.5}));
        assert_eq!(
            sent[1],
            json!({"name": "calculator", "response": {"result": 13.5}})
        );
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains(TEST_KEY), "the key never shows");
    }
}

#[test]
fn gemini_3_gets_round_one_thought_signature_back_in_round_two() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    for stream in [true, false] {
        let mock = Mock::start(&round_trip());
        let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
        let out = run(&s, &mock, "shop3", extra);
        // The mock refuses, as Gemini 3 does, a function call turn without its signature.
        assert!(out.status.success(), "stream={stream}: {}", stderr(&out));
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 2);
        let model_turn = &reqs[1]["body"]["contents"][1];
        assert_eq!(model_turn["role"], "model");
        let parts = model_turn["parts"].as_array().expect("parts");
        let calls: Vec<&Value> = parts
            .iter()
            .filter(|p| p["functionCall"].is_object())
            .collect();
        assert_eq!(calls.len(), 2, "{model_turn}");
        // kiln mock signs the first call of turn 0 with kilnMockSig00000x000.
        assert_eq!(calls[0]["thoughtSignature"], "kilnMockSig00000x000");
        assert!(calls[1].get("thoughtSignature").is_none(), "{model_turn}");
    }
}

#[test]
fn the_mock_refuses_a_gemini_3_call_turn_without_its_signature_and_unpaired_responses() {
    let mock = Mock::start(&json!({"turns": [{"text": "ok"}]}));
    let url = |m: &str| format!("{}/v1beta/models/{m}:generateContent", mock.url);
    let key = [("x-goog-api-key", "k")];
    let unsigned = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "lookup", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "lookup", "response": {"result": 1}}}]}
    ]});
    let (status, body) = post(&url("gemini-3-pro-preview"), &unsigned, &key);
    assert_eq!(status, 400);
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("missing a thought_signature"),
        "{body}"
    );
    let unpaired = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "user", "parts": [{"function_response": {"name": "lookup", "response": {"result": 1}}}]}
    ]});
    let (status, body) = post(&url("gemini-2.5-flash"), &unpaired, &key);
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!(400)),
        "{body}"
    );
    let (status, body) = post(&url("gemini-2.5-flash"), &unsigned, &[]);
    assert_eq!(
        (status, &body["error"]["status"]),
        (403, &json!("PERMISSION_DENIED"))
    );
    // What it accepts: the same turn signed, under /v1 as well.
    let mut signed = unsigned.clone();
    signed["contents"][1]["parts"][0]["thoughtSignature"] = json!("c2ln");
    let v1 = format!(
        "{}/v1/models/gemini-3-pro-preview:generateContent",
        mock.url
    );
    let (status, body) = post(&v1, &signed, &key);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["candidates"][0]["content"]["parts"][0]["text"], "ok");
}

#[test]
fn a_malformed_gemini_reply_is_an_error_naming_the_wire() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    for stream in [true, false] {
        let mock = Mock::start(&json!({"turns": [{"malformed": true}]}));
        let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
        let out = run(&s, &mock, "shop", extra);
        let err = stderr(&out);
        assert!(!out.status.success(), "stream={stream}");
        assert!(
            err.contains("gemini: malformed reply"),
            "stream={stream}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn kiln_check_names_the_schema_keywords_a_gemini_agent_may_lose_and_a_typo_gets_a_hint() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    let out = kiln(&["check", "--scripts", "."], s.path());
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "warnings only: {text}");
    assert!(
        text.contains("the schema of tool \"lookup\" uses keywords outside the JSON Schema subset Gemini documents")
            && text.contains("pattern at properties.sku"),
        "{text}"
    );
    let typo = Scripts::new(&[("t.rhai", r#"agent("g").provider("gemni");"#)]);
    let out = kiln(&["check", "--no-stdlib", "--scripts", "."], typo.path());
    assert!(
        stderr(&out).contains("did you mean \"gemini\""),
        "{}",
        stderr(&out)
    );
}
