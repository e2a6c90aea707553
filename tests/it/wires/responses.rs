//! OpenAI's Responses API and Azure OpenAI end to end: the real `kiln ask` against `kiln mock`,
//! a full tool round trip on each (plain and streamed), reasoning items carried to the next
//! round, usage with reasoning tokens, and malformed replies as errors naming the wire.

use crate::common::*;
use serde_json::{Value, json};

/// An agent per provider, with the loop tests' tools.
fn agents() -> Scripts {
    let mut src = String::from(
        r#"
tool("lookup").description("Find a product").param("sku", "string", #{ pattern: "^SKU-[0-9]+$" })
    .handler(|args| if args.sku == "SKU-1" { #{ name: "brick", price: 4.5 } } else { throw tool_error(`no product ${args.sku}`) });
"#,
    );
    for p in ["openai-responses", "azure", "azure-responses"] {
        let name = p.replace('-', "_");
        src.push_str(&format!(
            "agent(\"shop_{name}\").provider(\"{p}\").model(\"my-deployment\").system(\"You sell bricks.\")\n    .tools([\"lookup\", \"calculator\"]).max_tool_iterations(3);\n"
        ));
    }
    Scripts::new(&[("shop.rhai", &src)])
}

/// The mock's `encrypted_content` for turn `n`'s reasoning `text` (kiln_mock's own rule).
fn encrypted(n: usize, text: &str) -> String {
    let hex: String = text.bytes().take(24).map(|b| format!("{b:02x}")).collect();
    format!("gAAAAB-kiln-mock-{n}-{hex}")
}

const THOUGHT: &str = "The user wants SKU-1 times three.";

fn round_trip() -> Value {
    json!({"turns": [
        {"reasoning": THOUGHT, "text": "Let me check. ",
         "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "calculator", "args": {"expression": "4.5 * 3"}}],
         "usage": {"input_tokens": 100, "output_tokens": 60, "reasoning_tokens": 40}},
        {"text": "Three bricks cost 13.5.", "usage": {"input_tokens": 150, "output_tokens": 7}}
    ]})
}

/// `kiln ask --json` for `provider`'s agent against `mock` (streamed unless `--no-stream`).
fn ask_json(
    scripts: &Scripts,
    mock: &Mock,
    provider: &str,
    extra: &[&str],
) -> (Value, std::process::Output) {
    let agent = format!("shop_{}", provider.replace('-', "_"));
    let base = if provider.starts_with("azure") {
        mock.url.clone()
    } else {
        format!("{}/v1", mock.url)
    };
    let mut args = vec![
        agent.as_str(),
        "Price of SKU-1 times 3?",
        "--scripts",
        ".",
        "--base-url",
        &base,
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = ask_command(&args, scripts.path())
        .env("AZURE_OPENAI_API_KEY", TEST_KEY)
        .env_remove("AZURE_OPENAI_AD_TOKEN")
        .env_remove("AZURE_OPENAI_ENDPOINT")
        .env_remove("OPENAI_API_VERSION")
        .output()
        .expect("run kiln ask");
    let v = serde_json::from_str(&stdout(&out)).unwrap_or(Value::Null);
    (v, out)
}

/// The request path each provider's requests take on the mock.
fn path_of(provider: &str) -> &'static str {
    match provider {
        "azure" => "/openai/deployments/{deployment}/chat/completions",
        "azure-responses" => "/openai/responses",
        _ => "/v1/responses",
    }
}

#[test]
fn a_tool_round_trip_completes_on_responses_and_azure_plain_and_streamed() {
    let s = agents();
    for provider in ["openai-responses", "azure", "azure-responses"] {
        for stream in [true, false] {
            let mock = Mock::start(&round_trip());
            let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
            let (v, out) = ask_json(&s, &mock, provider, extra);
            let what = format!("{provider} (stream {stream})");
            assert!(out.status.success(), "{what}: {}", stderr(&out));
            assert_eq!(v["answer"], "Three bricks cost 13.5.", "{what}");
            assert_eq!(v["rounds"], 2, "{what}");
            let calls = v["tool_calls"].as_array().expect("calls");
            assert_eq!(calls[0]["outcome"]["result"]["price"], 4.5, "{what}");
            let requests = mock.requests();
            assert_eq!(requests.len(), 2, "{what}");
            for r in &requests {
                assert_eq!(r["path"], path_of(provider), "{what}");
                assert_eq!(r["body"]["stream"] == true, stream, "{what}");
            }
            let headers = &requests[0]["headers"];
            if provider.starts_with("azure") {
                assert_eq!(
                    headers["api-key"], "<redacted>",
                    "{what}: the key goes in api-key"
                );
                assert!(headers.get("authorization").is_none(), "{what}");
            } else {
                assert_eq!(headers["authorization"], "<redacted>", "{what}");
            }
            assert!(!stdout(&out).contains(TEST_KEY) && !stderr(&out).contains(TEST_KEY));
            if provider == "azure" {
                // Chat Completions: the results answer the calls by id.
                let msgs = &requests[1]["body"]["messages"];
                assert_eq!(msgs[3]["tool_call_id"], "call_mock_0_0", "{what}");
                continue;
            }
            let input = requests[1]["body"]["input"]
                .as_array()
                .expect("input")
                .clone();
            let outputs: Vec<&str> = (input.iter())
                .filter(|i| i["type"] == "function_call_output")
                .filter_map(|i| i["call_id"].as_str())
                .collect();
            assert_eq!(outputs, ["call_mock_0_0", "call_mock_0_1"], "{what}");
            assert_eq!(requests[1]["body"]["store"], false, "{what}");
        }
    }
}

#[test]
fn a_reasoning_item_from_round_one_is_in_round_twos_input_before_its_calls() {
    let s = agents();
    for provider in ["openai-responses", "azure-responses"] {
        for stream in [true, false] {
            let mock = Mock::start(&round_trip());
            let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
            let (v, out) = ask_json(&s, &mock, provider, extra);
            let what = format!("{provider} (stream {stream})");
            assert!(out.status.success(), "{what}: {}", stderr(&out));
            let requests = mock.requests();
            let first = &requests[0]["body"];
            assert_eq!(
                first["include"],
                json!(["reasoning.encrypted_content"]),
                "{what}"
            );
            let input = requests[1]["body"]["input"]
                .as_array()
                .expect("input")
                .clone();
            let kinds: Vec<String> = (input.iter())
                .map(|i| {
                    i["type"]
                        .as_str()
                        .or(i["role"].as_str())
                        .unwrap_or("?")
                        .to_string()
                })
                .collect();
            assert_eq!(
                kinds,
                [
                    "user",
                    "reasoning",
                    "message",
                    "function_call",
                    "function_call",
                    "function_call_output",
                    "function_call_output"
                ],
                "{what}"
            );
            assert_eq!(input[1]["id"], "rs_mock_0", "{what}");
            assert_eq!(
                input[1]["encrypted_content"],
                encrypted(0, THOUGHT),
                "{what}"
            );
            assert_eq!(
                input[3]["id"], "fc_mock_0_0",
                "{what}: the call keeps its item id"
            );
            // Usage reaches the report, reasoning tokens included.
            assert_eq!(
                v["usage"],
                json!({"input_tokens": 250, "output_tokens": 67, "reasoning_tokens": 40}),
                "{what}"
            );
        }
    }
}

#[test]
fn the_mock_refuses_what_the_responses_api_refuses() {
    let mock = Mock::start(&json!({"turns": [{"text": "x"}], "loop": true}));
    let url = format!("{}/v1/responses", mock.url);
    let auth = ("authorization", "Bearer k");
    let cases = [
        (
            json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "c9", "output": "1"}]}),
            400,
            "No tool call found for function call output with call_id c9.",
        ),
        (
            json!({"model": "m", "input": [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}]}),
            400,
            "No tool output found for function call c1.",
        ),
        (
            json!({"model": "m", "input": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "1"}]}),
            400,
            "call_id c2",
        ),
        (
            json!({"model": "m", "store": false, "input": [{"type": "reasoning", "id": "rs_1", "summary": []},
            {"role": "assistant", "content": "x"}]}),
            404,
            "Items are not persisted when `store` is set to false",
        ),
        (
            json!({"model": "m", "input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"role": "user", "content": "x"}]}),
            400,
            "without its required following item",
        ),
        (
            json!({"model": "m", "input": "hi", "tools": [{"type": "function", "function": {"name": "f"}}]}),
            400,
            "tools[0].name",
        ),
    ];
    for (body, status, says) in cases {
        let (got, err) = post(&url, &body, &[auth]);
        assert_eq!(got, status, "{body}: {err}");
        assert_eq!(err["error"]["type"], "invalid_request_error", "{err}");
        assert!(
            err["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(says)),
            "{err}"
        );
    }
    let (got, err) = post(&url, &json!({"model": "m", "input": "hi"}), &[]);
    assert_eq!(got, 401, "no Authorization header: {err}");
    let (got, _) = post(&url, &json!({"model": "m", "input": "hi"}), &[auth]);
    assert_eq!(got, 200, "a good request passes");
    // Azure: the credential and the api-version first.
    let azure = format!("{}/openai/responses", mock.url);
    let body = json!({"model": "d", "input": "hi"});
    let (got, err) = post(
        &format!("{azure}?api-version=2025-04-01-preview"),
        &body,
        &[],
    );
    assert_eq!(
        (got, err["error"]["code"].clone()),
        (401, json!("401")),
        "{err}"
    );
    let (got, err) = post(&azure, &body, &[("api-key", "k")]);
    assert_eq!(
        (got, err["error"]["message"].clone()),
        (404, json!("Resource not found"))
    );
    let (got, _) = post(
        &format!("{azure}?api-version=latest"),
        &body,
        &[("api-key", "k")],
    );
    assert_eq!(got, 400);
    let chat = format!(
        "{}/openai/deployments/d/chat/completions?api-version=2024-10-21",
        mock.url
    );
    let (got, err) = post(
        &chat,
        &json!({"model": "d", "messages": [{"role": "user", "content": "hi"}]}),
        &[("api-key", "k")],
    );
    assert_eq!(got, 200, "{err}");
}

#[test]
fn a_malformed_responses_reply_is_an_error_naming_the_wire() {
    let s = agents();
    for provider in ["openai-responses", "azure-responses"] {
        for (turn, says) in [
            (json!({"malformed": true}), "malformed reply"),
            (
                json!({"stream_error": "the model is overloaded"}),
                "the model is overloaded",
            ),
            (
                json!({"text": "x", "cut": true}),
                "ended before response.completed",
            ),
        ] {
            for stream in [true, false] {
                if turn["cut"] == true && !stream {
                    continue;
                }
                let mock = Mock::start(&json!({"turns": [turn]}));
                let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
                let (_, out) = ask_json(&s, &mock, provider, extra);
                let err = stderr(&out);
                assert!(!out.status.success(), "{provider} {turn}: {err}");
                assert!(
                    err.contains("openai-responses:"),
                    "{provider} {turn} names the wire: {err}"
                );
                assert!(err.contains(says), "{provider} {turn} says {says}: {err}");
                assert!(!err.contains("panicked"), "{err}");
            }
        }
    }
}

#[test]
fn azure_needs_an_endpoint_and_a_credential_and_takes_an_entra_token() {
    let s = agents();
    let out = ask_command(&["shop_azure", "hi", "--scripts", "."], s.path())
        .env_remove("AZURE_OPENAI_ENDPOINT")
        .env("AZURE_OPENAI_API_KEY", TEST_KEY)
        .output()
        .expect("kiln ask");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("AZURE_OPENAI_ENDPOINT"),
        "{}",
        stderr(&out)
    );
    let mock = Mock::start(&json!({"turns": [{"text": "hello"}]}));
    let out = ask_command(
        &[
            "shop_azure_responses",
            "hi",
            "--scripts",
            ".",
            "--no-stream",
        ],
        s.path(),
    )
    .env("AZURE_OPENAI_ENDPOINT", &mock.url)
    .env_remove("AZURE_OPENAI_API_KEY")
    .env("AZURE_OPENAI_AD_TOKEN", TEST_KEY)
    .env("OPENAI_API_VERSION", "2025-04-01-preview")
    .output()
    .expect("kiln ask");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "hello");
    let headers = &mock.requests()[0]["headers"];
    assert_eq!(headers["authorization"], "<redacted>");
    assert!(headers.get("api-key").is_none());
    let out = ask_command(
        &[
            "shop_azure",
            "hi",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
        ],
        s.path(),
    )
    .env_remove("AZURE_OPENAI_API_KEY")
    .env_remove("AZURE_OPENAI_AD_TOKEN")
    .output()
    .expect("kiln ask");
    assert!(
        stderr(&out).contains("AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN)"),
        "{}",
        stderr(&out)
    );
}

/// The SSE events of a reply body, as JSON.
fn sse_events(text: &str) -> Vec<Value> {
    (text.lines())
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("event json"))
        .collect()
}

#[test]
fn what_kiln_sends_and_the_mock_answers_validate_against_openais_responses_schemas() {
    use crate::scripts::spec::{assert_openai, openai_validator};
    let request = openai_validator("CreateResponse");
    let (response, event) = (
        openai_validator("Response"),
        openai_validator("ResponseStreamEvent"),
    );
    let s = agents();
    let mut checked = 0;
    for stream in [true, false] {
        let mock = Mock::start(&round_trip());
        let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
        let (_, out) = ask_json(&s, &mock, "openai-responses", extra);
        assert!(out.status.success(), "{}", stderr(&out));
        for r in mock.requests() {
            assert_openai("CreateResponse", &request, &r["body"]);
            checked += 1;
            // The mock's answer to the same request, whole and streamed.
            let replay = Mock::start(&round_trip());
            let url = format!("{}/v1/responses", replay.url);
            let mut body = r["body"].clone();
            body["stream"] = json!(false);
            let (status, reply) = post(&url, &body, &[("authorization", "Bearer k")]);
            assert_eq!(status, 200, "{reply}");
            assert_openai("Response", &response, &reply);
            body["stream"] = json!(true);
            let (status, _, text) =
                http("POST", &url, &[("authorization", "Bearer k")], Some(&body));
            assert_eq!(status, 200, "{text}");
            let events = sse_events(&text);
            assert!(events.len() > 4, "{text}");
            for ev in events {
                assert_openai("ResponseStreamEvent", &event, &ev);
            }
        }
    }
    assert_eq!(checked, 4);
    assert!(
        !request
            .is_valid(&json!({"model": "m", "input": [{"type": "function_call", "name": "f"}]})),
        "the validator can fail"
    );
}
