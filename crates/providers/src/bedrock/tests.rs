//! Bedrock Converse's converters: request rendering (whole and incremental), reply parsing,
//! event stream assembly, frame decoding (CRCs) and signing.

use super::*;
use crate::bedrock::reply::{FrameReader, StreamState, parse_event_stream};
use crate::{StopReason, ToolCall, ToolResult};
use aws_smithy_eventstream::frame::write_message_to;
use aws_smithy_types::event_stream::{Header, HeaderValue, Message as Frame};
use std::sync::{Arc, Mutex};

fn request<'a>(messages: Vec<Message>, tools: Vec<ToolDef>) -> ModelRequest<'a> {
    ModelRequest {
        model: "anthropic.claude-haiku-4-5-20251001-v1:0".into(),
        system: Some("Be brief.".into()),
        messages: messages.into(),
        tools,
        temperature: Some(0.2),
        max_tokens: 512,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    }
}

fn conversation() -> Vec<Message> {
    vec![
        Message::user("Price of SKU-1?"),
        Message::Assistant {
            content: "Let me look.".into(),
            tool_calls: vec![
                ToolCall {
                    id: "tooluse_1".into(),
                    name: "lookup".into(),
                    args: CallArgs::parsed(json!({"sku": "SKU-1"})),
                },
                ToolCall {
                    id: "tooluse_2".into(),
                    name: "lookup".into(),
                    args: CallArgs::parsed(json!({"sku": "SKU-9"})),
                },
            ],
            replay: None,
        },
        Message::Tool {
            results: vec![
                ToolResult {
                    call_id: "tooluse_1".into(),
                    name: "lookup".into(),
                    content: "{\"price\":4.5}".into(),
                    is_error: false,
                },
                ToolResult {
                    call_id: "tooluse_2".into(),
                    name: "lookup".into(),
                    content: "no product SKU-9".into(),
                    is_error: true,
                },
            ],
        },
        Message::user("And twice?"),
    ]
}

fn lookup() -> ToolDef {
    ToolDef {
        name: "lookup".into(),
        description: "Find a product".into(),
        schema: json!({"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}).into(),
        deferred: false,
    }
}

#[test]
fn tool_choice_is_tool_config_choice_and_none_offers_no_tools_where_it_can() {
    let question = || conversation()[..1].to_vec();
    let body = |messages: Vec<Message>, choice: ToolChoice| {
        let mut req = request(messages, vec![lookup()]);
        (req.tool_choice, req.parallel_tool_calls) = (choice, Some(false));
        request_body(&req)
    };
    // The default (and parallel_tool_calls, which Converse has no field for) sends no choice.
    let auto = body(question(), ToolChoice::Auto);
    assert_eq!(auto, request_body(&request(question(), vec![lookup()])));
    assert!(auto["toolConfig"].get("toolChoice").is_none());
    assert_eq!(
        body(question(), ToolChoice::Required)["toolConfig"]["toolChoice"],
        json!({"any": {}})
    );
    assert_eq!(
        body(question(), ToolChoice::Tool("lookup".into()))["toolConfig"]["toolChoice"],
        json!({"tool": {"name": "lookup"}})
    );
    // No "none" in Converse: no tools offered; but a conversation with tool blocks needs
    // `toolConfig`, so there the tools go as offered.
    assert!(
        body(question(), ToolChoice::None)
            .get("toolConfig")
            .is_none()
    );
    let held = body(conversation(), ToolChoice::None);
    assert_eq!(
        held["toolConfig"],
        json!({"tools": tool_definitions(&[lookup()])})
    );
    let bedrock = Bedrock {
        endpoint: crate::Endpoint {
            base_url: "http://127.0.0.1:1".into(),
            api_key: None,
            key_var: None,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            limits: crate::Limits::default(),
        },
        region: "us-east-1".into(),
        model: "m".into(),
        auth: AwsAuth::Bearer("bedrock-api-key-0123456789".into()),
        rendered: Default::default(),
    };
    let choices = [
        ToolChoice::None,
        ToolChoice::Tool("lookup".into()),
        ToolChoice::None,
        ToolChoice::Auto,
    ];
    for (n, choice) in choices.into_iter().enumerate() {
        let mut req = request(conversation()[..n + 1].to_vec(), vec![lookup()]);
        req.tool_choice = choice;
        let sent: Value = serde_json::from_slice(&bedrock.request_bytes(&req)).expect("json");
        assert_eq!(sent, request_body(&req), "request {n}");
    }
}

#[test]
fn requests_render_converse_blocks_tool_results_in_the_next_user_message() {
    let req = request(conversation(), vec![lookup()]);
    let body = request_body(&req);
    assert_eq!(body["system"], json!([{"text": "Be brief."}]));
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 512, "temperature": 0.2})
    );
    let spec = &body["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["name"], "lookup");
    assert_eq!(spec["description"], "Find a product");
    assert_eq!(spec["inputSchema"]["json"]["required"], json!(["sku"]));
    assert!(body.get("model").is_none(), "the model id is in the path");
    let msgs = body["messages"].as_array().expect("messages");
    assert_eq!(
        msgs.len(),
        3,
        "results and the next question are one user message"
    );
    assert_eq!(
        msgs[1]["content"][1],
        json!({"toolUse": {"toolUseId": "tooluse_1", "name": "lookup", "input": {"sku": "SKU-1"}}})
    );
    let user = msgs[2]["content"].as_array().expect("blocks");
    assert_eq!(
        user[0],
        json!({"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "{\"price\":4.5}"}]}})
    );
    assert_eq!(user[1]["toolResult"]["status"], "error");
    assert_eq!(user[2], json!({"text": "And twice?"}));
}

#[test]
fn incremental_rendering_sends_what_the_whole_rendering_does_round_after_round() {
    let bedrock = Bedrock {
        endpoint: crate::Endpoint {
            base_url: "http://127.0.0.1:1".into(),
            api_key: None,
            key_var: None,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            limits: crate::Limits::default(),
        },
        region: "us-east-1".into(),
        model: "m".into(),
        auth: AwsAuth::Bearer("bedrock-api-key-0123456789".into()),
        rendered: Default::default(),
    };
    let all = conversation();
    for n in 1..=all.len() {
        let mut req = request(all[..n].to_vec(), vec![lookup()]);
        req.unchanged_prefix = n - 1;
        let bytes = bedrock.request_bytes(&req);
        let sent: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(sent, request_body(&req), "round {n}");
    }
    let mut no_tools = request(all[..1].to_vec(), vec![]);
    no_tools.system = None;
    let sent: Value = serde_json::from_slice(&bedrock.request_bytes(&no_tools)).expect("json");
    assert!(sent.get("toolConfig").is_none() && sent.get("system").is_none());
}

#[test]
fn model_ids_are_one_percent_encoded_path_segment() {
    assert_eq!(
        encode_model_id("anthropic.claude-haiku-4-5-20251001-v1:0"),
        "anthropic.claude-haiku-4-5-20251001-v1%3A0"
    );
    assert_eq!(
        encode_model_id("arn:aws:bedrock:us-east-1:1:inference-profile/us.x"),
        "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x"
    );
}

#[test]
fn whole_replies_parse_text_tool_uses_stop_reason_and_usage() {
    let v = json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "Looking."},
            {"toolUse": {"toolUseId": "tooluse_a", "name": "lookup", "input": {"sku": "SKU-1"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 30, "outputTokens": 9, "totalTokens": 39},
        "metrics": {"latencyMs": 120}
    });
    let reply = crate::bedrock::reply::parse_response(&v).expect("reply");
    assert_eq!(reply.text, "Looking.");
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(reply.usage, crate::Usage::new(30, 9));
    assert_eq!(reply.tool_calls[0].id, "tooluse_a");
    assert_eq!(
        reply.tool_calls[0].args,
        CallArgs::parsed(json!({"sku": "SKU-1"}))
    );
    for (stop, want) in [
        ("end_turn", StopReason::EndTurn),
        ("max_tokens", StopReason::MaxTokens),
        ("stop_sequence", StopReason::StopSequence),
        (
            "guardrail_intervened",
            StopReason::Other("guardrail_intervened".into()),
        ),
        (
            "content_filtered",
            StopReason::Other("content_filtered".into()),
        ),
    ] {
        let v = json!({"output": {"message": {"content": [{"text": "x"}]}}, "stopReason": stop});
        assert_eq!(
            crate::bedrock::reply::parse_response(&v).expect(stop).stop,
            want
        );
    }
    let cut = json!({"output": {"message": {"content": [{"toolUse": {"toolUseId": "t", "name": "lookup", "input": {}}}]}}, "stopReason": "max_tokens"});
    assert!(matches!(
        crate::bedrock::reply::parse_response(&cut),
        Err(ProviderError::Truncated { .. })
    ));
    for bad in [
        json!({"message": "Too many requests"}),
        json!({"output": {"message": {"content": [{"toolUse": {"name": "x"}}]}}}),
        json!({"output": {"message": {"content": [{"text": 5}]}}}),
    ] {
        let err = crate::bedrock::reply::parse_response(&bad)
            .expect_err("malformed")
            .to_string();
        assert!(err.starts_with("bedrock: malformed reply"), "{err}");
    }
}

fn frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    let mut msg = Frame::new(bytes::Bytes::from(payload.to_string()));
    for (k, v) in headers {
        msg = msg.add_header(Header::new(
            k.to_string(),
            HeaderValue::String(v.to_string().into()),
        ));
    }
    let mut out = Vec::new();
    write_message_to(&msg, &mut out).expect("frame");
    out
}

fn event(kind: &str, payload: Value) -> Vec<u8> {
    let headers = [
        (":event-type", kind),
        (":content-type", "application/json"),
        (":message-type", "event"),
    ];
    frame(&headers, &payload.to_string())
}

fn tool_stream() -> Vec<u8> {
    [
        event("messageStart", json!({"role": "assistant", "p": "abcdefgh"})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Let me "}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "look."}})),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event("contentBlockStart", json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_x", "name": "lookup"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"sku\":"}}})),
        event("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"SKU-1\"}"}}})),
        event("contentBlockStop", json!({"contentBlockIndex": 1})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        event("metadata", json!({"usage": {"inputTokens": 12, "outputTokens": 20, "totalTokens": 32}, "metrics": {"latencyMs": 5}})),
    ]
    .concat()
}

fn collecting() -> (TextSink, Arc<Mutex<String>>) {
    let seen = Arc::new(Mutex::new(String::new()));
    let into = seen.clone();
    let sink: TextSink = Arc::new(move |t: &str| into.lock().expect("lock").push_str(t));
    (sink, seen)
}

#[test]
fn streams_assemble_text_tool_calls_and_usage_however_the_bytes_are_cut() {
    let bytes = tool_stream();
    let (sink, seen) = collecting();
    let whole = parse_event_stream(&bytes, &sink).expect("reply");
    assert_eq!(*seen.lock().expect("lock"), "Let me look.");
    assert_eq!(whole.text, "Let me look.");
    assert_eq!(whole.stop, StopReason::ToolUse);
    assert_eq!(whole.usage, crate::Usage::new(12, 20));
    assert_eq!(whole.tool_calls[0].name, "lookup");
    assert_eq!(
        whole.tool_calls[0].args,
        CallArgs::parsed(json!({"sku": "SKU-1"}))
    );
    // Byte by byte: the frames come out the same.
    let mut reader = FrameReader::new(1 << 20);
    let mut state = StreamState::default();
    for b in &bytes {
        for msg in reader.push(std::slice::from_ref(b)).expect("frames") {
            state.apply(&msg, &sink).expect("event");
        }
    }
    assert!(!reader.has_partial());
    assert_eq!(state.finish().expect("reply"), whole);
}

#[test]
fn bad_frames_exceptions_and_cut_streams_are_clear_errors() {
    let (sink, _) = collecting();
    let mut bytes = tool_stream();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x5a;
    let err = parse_event_stream(&bytes, &sink)
        .expect_err("bad crc")
        .to_string();
    assert!(
        err.starts_with("bedrock: malformed reply: bad event stream frame"),
        "{err}"
    );
    let throttled = frame(
        &[
            (":exception-type", "throttlingException"),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        r#"{"message":"Too many requests, please wait before trying again."}"#,
    );
    let err = parse_event_stream(
        &[
            event("messageStart", json!({"role": "assistant"})),
            throttled,
        ]
        .concat(),
        &sink,
    )
    .expect_err("exception");
    assert!(
        matches!(err, ProviderError::Http { status: 429, .. }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("throttlingException in the stream: Too many requests")
    );
    let cut = tool_stream();
    let err = parse_event_stream(&cut[..cut.len() / 2], &sink)
        .expect_err("cut")
        .to_string();
    assert!(err.contains("bedrock"), "{err}");
    let not_json = event("messageStart", json!("x"));
    let err = parse_event_stream(&not_json, &sink)
        .expect_err("not an object")
        .to_string();
    assert!(err.contains("messageStart event is not an object"), "{err}");
    let mut reader = FrameReader::new(64);
    let err = reader.push(&tool_stream()).expect_err("too large");
    assert!(
        matches!(err, ProviderError::TooLarge { limit: 64, .. }),
        "{err}"
    );
}

#[test]
fn the_event_stream_test_vectors_decode_or_are_refused_by_their_crcs() {
    // aws-smithy-eventstream's test vectors (testdata/eventstream/README.md).
    let valid = include_bytes!("../../testdata/eventstream/valid_with_all_headers_and_payload");
    let frames = FrameReader::new(1 << 20).push(valid).expect("valid frame");
    assert_eq!(frames.len(), 1);
    assert!(!frames[0].payload().is_empty());
    for bad in [
        &include_bytes!("../../testdata/eventstream/invalid_prelude_checksum")[..],
        &include_bytes!("../../testdata/eventstream/invalid_message_checksum")[..],
    ] {
        let err = FrameReader::new(1 << 20).push(bad).expect_err("refused");
        assert!(err.to_string().contains("checksum"), "{err}");
    }
}

#[test]
fn requests_are_signed_sigv4_and_credentials_stay_secret() {
    let auth = AwsAuth::Keys {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("session-token-EXAMPLE-0123456789".into()),
    };
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_440_938_160);
    let url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m%3A0/converse";
    let headers = auth
        .headers_at(url, "us-east-1", b"{}", time)
        .expect("signed");
    let authz = headers["authorization"].to_str().expect("ascii");
    assert!(authz.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="), "{authz}");
    assert_eq!(headers["x-amz-date"], "20150830T123600Z");
    assert!(
        headers["authorization"].is_sensitive() && headers["x-amz-security-token"].is_sensitive()
    );
    // Another body, another signature.
    let other = auth
        .headers_at(url, "us-east-1", b"{ }", time)
        .expect("signed");
    assert_ne!(other["authorization"], headers["authorization"]);
    let debug = format!("{auth:?}");
    assert!(
        !debug.contains("EXAMPLEKEY") && !debug.contains("0123456789"),
        "{debug}"
    );
    let text =
        "secret wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY token session-token-EXAMPLE-0123456789";
    let clean = auth.secrets().redact(text).into_owned();
    assert!(
        !clean.contains("EXAMPLEKEY") && !clean.contains("0123456789"),
        "{clean}"
    );
    let bearer = AwsAuth::Bearer("bedrock-api-key-0123456789".into());
    let h = bearer
        .headers_at(url, "us-east-1", b"{}", time)
        .expect("bearer");
    assert_eq!(h["authorization"], "Bearer bedrock-api-key-0123456789");
}

#[test]
fn attachments_are_image_and_document_blocks_of_bytes_after_the_text() {
    use crate::attach::tests::{pdf, png, user};
    let body = request_body(&request(vec![user("look", vec![png(), pdf()])], Vec::new()));
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0], json!({"text": "look"}));
    assert_eq!(
        content[1],
        json!({"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}})
    );
    assert_eq!(
        content[2],
        json!({"document": {"format": "pdf", "name": "report v2", "source": {"bytes": "JVBERi0="}}})
    );
    let none = request_body(&request(vec![user("look", vec![])], Vec::new()));
    assert_eq!(none["messages"][0]["content"], json!([{"text": "look"}]));
}
