//! AWS Bedrock Converse end to end: `kiln ask` against `kiln mock`, which verifies each
//! request's SigV4 signature against the test key pair it was given; refusals in AWS's shape;
//! malformed replies and frames; and no credential in the run log, the traces or the output.

use crate::common::*;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};

/// The test key pair (AWS's documentation example, never a real one) and a session token.
pub const ACCESS_KEY: &str = "AKIDKILNTEST0EXAMPLE";
pub const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYKILNTESTKEY";
pub const SESSION_TOKEN: &str = "FwoGZXIvYXdzEKILNTESTSESSIONTOKEN0123456789abcdef";
pub const BEARER: &str = "ABSKQmVkcm9ja0FQSUtleS1LSUxOVEVTVA==";
pub const MODEL: &str = "anthropic.claude-haiku-4-5-20251001-v1:0";

const AGENTS: &str = r#"
tool("lookup").description("Find a product").param("sku", "string", #{ pattern: "^SKU-[0-9]+$" })
    .handler(|args| if args.sku == "SKU-1" { #{ name: "brick", price: 4.5 } } else { throw tool_error(`no product ${args.sku}`) });
agent("shop").provider("bedrock").model("anthropic.claude-haiku-4-5-20251001-v1:0")
    .system("You sell bricks.").tools(["lookup", "calculator"]).max_tool_iterations(3);
"#;

/// The mock, verifying signatures made with the test key pair and session token.
pub fn signing_mock(scenario: &Value) -> Mock {
    Mock::start_with(
        scenario,
        &[
            "--aws-access-key-id",
            ACCESS_KEY,
            "--aws-secret-access-key",
            SECRET_KEY,
            "--aws-session-token",
            SESSION_TOKEN,
            "--aws-bearer-token",
            BEARER,
        ],
    )
}

/// `kiln ask shop PROMPT` on Bedrock at `mock` with `secret` as the secret key.
fn ask_bedrock(
    dir: &std::path::Path,
    mock: &Mock,
    secret: &str,
    extra: &[&str],
) -> std::process::Output {
    let mut args = vec![
        "shop",
        "Price of SKU-1 times 3?",
        "--scripts",
        ".",
        "--base-url",
        &mock.url,
    ];
    args.extend_from_slice(extra);
    ask_command(&args, dir)
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", secret)
        .env("AWS_SESSION_TOKEN", SESSION_TOKEN)
        .env("AWS_REGION", "us-west-2")
        .env_remove("AWS_BEARER_TOKEN_BEDROCK")
        .env_remove("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
        .output()
        .expect("run kiln ask")
}

pub fn round_trip_scenario() -> Value {
    json!({"turns": [
        {"text": "Let me check. ", "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}, {"name": "calculator", "args": {"expression": "4.5 * 3"}}], "usage": {"input_tokens": 100, "output_tokens": 20}},
        {"text": "Three bricks cost 13.5.", "usage": {"input_tokens": 150, "output_tokens": 7}}
    ]})
}

#[test]
fn bedrock_runs_a_signed_tool_round_trip_streamed_and_not() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    for stream in [true, false] {
        let mock = signing_mock(&round_trip_scenario());
        let extra: &[&str] = if stream {
            &["--json"]
        } else {
            &["--json", "--no-stream"]
        };
        let out = ask_bedrock(s.path(), &mock, SECRET_KEY, extra);
        let what = format!("stream={stream}");
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        let v: Value = serde_json::from_str(&stdout(&out)).expect("the report");
        assert_eq!(v["answer"], "Three bricks cost 13.5.", "{what}");
        assert_eq!(
            v["usage"],
            json!({"input_tokens": 250, "output_tokens": 27}),
            "{what}"
        );
        assert_eq!(
            v["tool_calls"][0]["outcome"]["result"]["price"], 4.5,
            "{what}"
        );
        let reqs = mock.requests();
        assert_eq!(reqs.len(), 2, "{what}");
        let route = if stream {
            "converse-stream"
        } else {
            "converse"
        };
        assert_eq!(
            reqs[0]["path"],
            format!("/model/anthropic.claude-haiku-4-5-20251001-v1%3A0/{route}"),
            "{what}: the model id is one encoded path segment"
        );
        assert_eq!(reqs[0]["model"], MODEL);
        let auth = reqs[0]["headers"]["authorization"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(auth, "<redacted>", "the mock records no credential");
        let second = &reqs[1]["body"]["messages"];
        assert_eq!(
            second[1]["content"][1]["toolUse"]["toolUseId"],
            "tooluse_mock0x0"
        );
        let results = &second[2]["content"];
        assert_eq!(
            results[0]["toolResult"]["toolUseId"], "tooluse_mock0x0",
            "{what}"
        );
        assert!(
            results[0].to_string().contains("brick"),
            "{what}: {results}"
        );
        assert_eq!(
            results[1]["toolResult"]["toolUseId"], "tooluse_mock0x1",
            "{what}"
        );
    }
}

#[test]
fn a_wrong_secret_is_refused_as_aws_refuses_it_and_kiln_names_the_variables() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    let wrong = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYWRONGSECRET";
    for extra in [&["--no-stream"][..], &[][..]] {
        let mock = signing_mock(&round_trip_scenario());
        let out = ask_bedrock(s.path(), &mock, wrong, extra);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(
            err.contains("bedrock: HTTP 403: The request signature we calculated does not match the signature you provided."),
            "{err}"
        );
        assert!(
            err.contains("check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN"),
            "{err}"
        );
        let all = format!("{err}{}", stdout(&out));
        for secret in [wrong, SECRET_KEY, SESSION_TOKEN] {
            assert!(!all.contains(secret), "a credential in the output: {all}");
        }
        assert_eq!(
            mock.requests().len(),
            1,
            "a refused signature is not retried"
        );
    }
}

#[test]
fn a_bedrock_api_key_is_sent_as_a_bearer_token() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    for (key, ok) in [(BEARER, true), ("ABSKwrong-bedrock-api-key-000", false)] {
        let mock = signing_mock(&json!({"turns": [{"text": "Hello."}]}));
        let out = ask_command(
            &["shop", "hi", "--scripts", ".", "--base-url", &mock.url],
            s.path(),
        )
        .env("AWS_BEARER_TOKEN_BEDROCK", key)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .output()
        .expect("kiln ask");
        assert_eq!(out.status.success(), ok, "{}", stderr(&out));
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert!(!all.contains(key), "{all}");
        if !ok {
            assert!(
                all.contains("HTTP 403") && all.contains("check AWS_BEARER_TOKEN_BEDROCK"),
                "{all}"
            );
        }
    }
}

#[test]
fn no_credentials_is_a_clear_error_naming_the_variables() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    let out = ask_command(
        &[
            "shop",
            "hi",
            "--scripts",
            ".",
            "--base-url",
            "http://127.0.0.1:9",
        ],
        s.path(),
    )
    .env_remove("AWS_BEARER_TOKEN_BEDROCK")
    .env_remove("AWS_ACCESS_KEY_ID")
    .env_remove("AWS_SECRET_ACCESS_KEY")
    .output()
    .expect("kiln ask");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)"),
        "{err}"
    );
}

#[test]
fn malformed_bedrock_replies_and_frames_end_in_clear_errors() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    let cases: [(Value, bool, &str); 6] = [
        (
            json!({"malformed": true}),
            false,
            "bedrock: malformed reply: reply is not JSON",
        ),
        (
            json!({"malformed": true}),
            true,
            "bedrock: malformed reply: bad event stream frame",
        ),
        (
            json!({"stream_error": "model went away"}),
            true,
            "modelStreamErrorException in the stream: model went away",
        ),
        (
            json!({"stream_error": "model went away"}),
            false,
            "HTTP 424: model went away",
        ),
        (
            json!({"cut": true, "text": "a long enough answer to cut"}),
            true,
            "bedrock: request failed: the stream ended before messageStop",
        ),
        (
            json!({"truncate": true, "tool_calls": [{"name": "lookup", "args": {"sku": "SKU-1"}}]}),
            true,
            "hit max_tokens in the middle of tool call \"lookup\"",
        ),
    ];
    for (turn, stream, want) in cases {
        let mock = signing_mock(&json!({"turns": [turn]}));
        let extra: &[&str] = if stream { &[] } else { &["--no-stream"] };
        let out = ask_bedrock(s.path(), &mock, SECRET_KEY, extra);
        let err = stderr(&out);
        assert!(!out.status.success(), "{turn} stream={stream}");
        assert!(err.contains(want), "{turn} stream={stream}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A throttled request is asked again.
    let mock = signing_mock(
        &json!({"turns": [{"fault": {"status": 429, "retry_after": 0}}, {"text": "Fine."}]}),
    );
    let out = ask_bedrock(s.path(), &mock, SECRET_KEY, &["--no-stream"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "Fine.\n");
}

/// A collector on 127.0.0.1 keeping every byte posted to it (OTLP/HTTP bodies).
fn collector() -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let into = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 65536];
            let _ = stream.set_read_timeout(Some(std::time::Duration::from_millis(300)));
            while let Ok(n) = stream.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                buf.extend_from_slice(&chunk[..n]);
                let text = String::from_utf8_lossy(&buf);
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if buf.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            into.lock().expect("lock").extend_from_slice(&buf);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    (url, seen)
}

#[test]
fn no_bedrock_credential_reaches_the_run_log_traces_or_output() {
    let s = Scripts::new(&[("shop.rhai", AGENTS)]);
    let (otlp, traces) = collector();
    let mock = signing_mock(&round_trip_scenario());
    let out = ask_command(
        &[
            "shop",
            "Price of SKU-1 times 3?",
            "--scripts",
            ".",
            "--base-url",
            &mock.url,
            "--otlp",
            &otlp,
        ],
        s.path(),
    )
    .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    .env("AWS_SESSION_TOKEN", SESSION_TOKEN)
    .env("KILN_LOG", "trace")
    .env_remove("AWS_BEARER_TOKEN_BEDROCK")
    .output()
    .expect("kiln ask");
    assert!(out.status.success(), "{}", stderr(&out));
    let traced = String::from_utf8_lossy(&traces.lock().expect("lock")).into_owned();
    assert!(
        traced.contains("aws.bedrock"),
        "the chat span names the provider: {} bytes",
        traced.len()
    );
    let mut log = Vec::new();
    for entry in std::fs::read_dir(s.path().join(".kiln"))
        .expect("the run log's folder")
        .flatten()
    {
        if entry.file_name().to_string_lossy().starts_with("kiln.db") {
            log.extend(std::fs::read(entry.path()).expect("read the run log"));
        }
    }
    let log = String::from_utf8_lossy(&log).into_owned();
    assert!(
        log.contains("Three bricks cost 13.5."),
        "the run log holds the run"
    );
    let output = format!("{}{}", stdout(&out), stderr(&out));
    for (place, text) in [
        ("the run log", &log),
        ("the traces", &traced),
        ("the output", &output),
    ] {
        for secret in [
            SECRET_KEY,
            SESSION_TOKEN,
            "CYKILNTESTKEY",
            "EKILNTESTSESSIONTOKEN",
        ] {
            assert!(!text.contains(secret), "a credential in {place}");
        }
    }
}
