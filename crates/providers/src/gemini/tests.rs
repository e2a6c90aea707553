//! Tests of the Gemini wire: the request converted, replies and streams read, thought
//! signatures carried from a reply to the next request.

use super::*;
use crate::{StopReason, ToolCall, ToolResult, Usage};

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        model: "gemini-2.5-flash".into(),
        system: Some("be brief".into()),
        messages: messages.into(),
        tools: vec![ToolDef {
            name: "calc".into(),
            description: "adds".into(),
            schema: json!({"type": "object", "properties": {"x": {"type": "integer", "minimum": 0}}, "required": ["x"]}).into(),
            deferred: false,
        }],
        temperature: Some(0.5),
        max_tokens: 100,
        stream: false,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    }
}

#[test]
fn tool_choice_is_the_function_calling_mode_and_one_allowed_name() {
    // The choice is the request's, not the conversation's: none is needed.
    let messages: [Message; 0] = [];
    let config = |choice: ToolChoice| {
        let mut req = request(&messages);
        (req.tool_choice, req.parallel_tool_calls) = (choice, Some(false));
        request_body(&req)["toolConfig"].clone()
    };
    // The default is what kiln always sent, parallel_tool_calls or not (Gemini has no switch).
    assert_eq!(
        config(ToolChoice::Auto),
        request_body(&request(&messages))["toolConfig"]
    );
    assert_eq!(
        config(ToolChoice::Auto),
        json!({"functionCallingConfig": {"mode": "AUTO"}})
    );
    assert_eq!(
        config(ToolChoice::None),
        json!({"functionCallingConfig": {"mode": "NONE"}})
    );
    assert_eq!(
        config(ToolChoice::Required),
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert_eq!(
        config(ToolChoice::Tool("calc".into())),
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["calc"]}})
    );
    let provider = Gemini {
        endpoint: crate::Endpoint {
            base_url: DEFAULT_BASE_URL.into(),
            api_key: Some("k".into()),
            key_var: None,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            limits: crate::Limits::default(),
        },
        rendered: Rendered::default(),
    };
    for choice in [
        ToolChoice::Tool("calc".into()),
        ToolChoice::Auto,
        ToolChoice::None,
    ] {
        let mut req = request(&messages);
        req.tool_choice = choice;
        let sent = String::from_utf8(provider.request_bytes(&req)).expect("utf-8");
        assert_eq!(sent, request_body(&req).to_string());
    }
}

fn quiet() -> TextSink {
    std::sync::Arc::new(|_: &str| {})
}

fn call(id: &str, args: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "calc".into(),
        args: CallArgs::parsed(args),
    }
}

#[test]
fn a_request_has_system_instruction_roles_function_parts_and_declarations() {
    let messages = vec![
        Message::user("add"),
        Message::Assistant {
            content: "Let me.".into(),
            tool_calls: vec![
                call("gemini_call_0", json!({"x": 1})),
                call("fc-7", json!({"x": 2})),
            ],
            replay: None,
        },
        Message::Tool {
            results: vec![
                ToolResult {
                    call_id: "gemini_call_0".into(),
                    name: "calc".into(),
                    content: "3".into(),
                    is_error: false,
                },
                ToolResult {
                    call_id: "fc-7".into(),
                    name: "calc".into(),
                    content: "no such x".into(),
                    is_error: true,
                },
            ],
        },
        Message::user("and?"),
    ];
    let body = request_body(&request(&messages));
    assert_eq!(
        body["systemInstruction"],
        json!({"parts": [{"text": "be brief"}]})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"]["properties"]["x"]["minimum"],
        0
    );
    assert_eq!(body["toolConfig"]["functionCallingConfig"]["mode"], "AUTO");
    assert_eq!(
        body["generationConfig"],
        json!({"maxOutputTokens": 100, "temperature": 0.5})
    );
    let contents = body["contents"].as_array().expect("contents");
    assert_eq!(
        contents.len(),
        3,
        "the results and the next user text join: {body}"
    );
    assert_eq!(contents[1]["role"], "model");
    let parts = &contents[1]["parts"];
    assert_eq!(parts[0], json!({"text": "Let me."}));
    // A call Gemini sent without an id goes back without one; a transcript without Gemini's
    // replay (another wire's turn) gets the documented skip signature on its first call.
    assert_eq!(
        parts[1],
        json!({"functionCall": {"name": "calc", "args": {"x": 1}}, "thoughtSignature": SKIP_SIGNATURE})
    );
    assert_eq!(
        parts[2],
        json!({"functionCall": {"name": "calc", "args": {"x": 2}, "id": "fc-7"}})
    );
    assert_eq!(contents[2]["role"], "user");
    assert_eq!(
        contents[2]["parts"],
        json!([
            {"functionResponse": {"name": "calc", "response": {"result": 3}}},
            {"functionResponse": {"name": "calc", "response": {"error": "no such x"}, "id": "fc-7"}},
            {"text": "and?"}
        ])
    );
    assert!(body.get("model").is_none(), "the model is in the URL only");
}

#[test]
fn result_objects_pass_as_they_are_and_the_rest_is_wrapped() {
    assert_eq!(response_object(r#"{"a":1}"#, false), json!({"a": 1}));
    assert_eq!(response_object("[1,2]", false), json!({"result": [1, 2]}));
    assert_eq!(
        response_object("plain text", false),
        json!({"result": "plain text"})
    );
    assert_eq!(
        response_object(r#"{"a":1}"#, true),
        json!({"error": {"a": 1}})
    );
}

#[test]
fn typed_output_goes_as_a_json_schema_when_gemini_takes_it_with_the_tools() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let mut req = request(&[]);
    req.output = Some(schema.clone());
    let cfg = &request_body(&req)["generationConfig"];
    assert!(
        cfg.get("responseJsonSchema").is_none(),
        "2.5 refuses it beside tools: {cfg}"
    );
    req.model = "gemini-3-flash-preview".into();
    let cfg = &request_body(&req)["generationConfig"];
    assert_eq!(cfg["responseMimeType"], "application/json");
    assert_eq!(cfg["responseJsonSchema"], schema);
    req.model = "gemini-2.5-flash".into();
    req.tools.clear();
    assert_eq!(
        request_body(&req)["generationConfig"]["responseJsonSchema"],
        schema
    );
}

/// A Gemini 3 reply to a function-calling turn: a thought part, text, parallel calls (the first
/// signed), in the shape of the google-genai SDK's test payloads (Apache-2.0).
fn signed_reply() -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "weighing it", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="},
                {"text": "Checking both."},
                {"functionCall": {"name": "calc", "args": {"x": 1}}, "thoughtSignature": "c2lnLTE="},
                {"functionCall": {"name": "calc", "args": {"x": 2}}}
            ]},
            "finishReason": "STOP", "index": 0
        }],
        "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 50, "thoughtsTokenCount": 30, "totalTokenCount": 200},
        "modelVersion": "gemini-3-flash-preview", "responseId": "r1"
    })
}

#[test]
fn a_reply_keeps_its_signatures_and_the_next_request_sends_them_on_the_same_parts() {
    let reply = parse_response(&signed_reply()).expect("reply");
    assert_eq!(
        reply.text, "Checking both.",
        "thoughts stay out of the answer"
    );
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 80,
            reasoning_tokens: 30
        }
    );
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["gemini_call_0", "gemini_call_1"]);
    let messages = vec![
        Message::user("go"),
        Message::Assistant {
            content: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            replay: reply.replay.clone(),
        },
    ];
    let body = request_body(&request(&messages));
    let parts = &body["contents"][1]["parts"];
    assert_eq!(parts[0]["thought"], true);
    assert_eq!(parts[0]["thoughtSignature"], "c2lnLXRob3VnaHQ=");
    assert_eq!(parts[1], json!({"text": "Checking both."}));
    assert_eq!(parts[2]["thoughtSignature"], "c2lnLTE=");
    assert!(parts[3].get("thoughtSignature").is_none(), "{parts}");
    // Another wire's replay is not Gemini's: the turn is sent as one Gemini did not write.
    let mut other = messages.clone();
    if let Message::Assistant { replay, .. } = &mut other[1] {
        *replay = Some(Replay {
            wire: "openai-responses".into(),
            data: json!({"items": []}),
        });
    }
    let body = request_body(&request(&other));
    assert_eq!(
        body["contents"][1]["parts"][1]["thoughtSignature"],
        SKIP_SIGNATURE
    );
}

#[test]
fn fields_are_read_in_either_protobuf_json_spelling() {
    let snake = json!({
        "candidates": [{"content": {"parts": [
            {"function_call": {"id": "x1", "name": "calc", "args": {"x": 1}}, "thought_signature": "c2ln"}
        ]}, "finish_reason": "STOP"}],
        "usage_metadata": {"prompt_token_count": 3, "candidates_token_count": 4}
    });
    let reply = parse_response(&snake).expect("reply");
    assert_eq!(reply.tool_calls[0].id, "x1");
    assert_eq!(reply.usage, Usage::new(3, 4));
    assert_eq!(reply.replay.expect("signed").data["calls"], json!(["c2ln"]));
}

#[test]
fn finish_reasons_and_blocks_become_stop_reasons_or_errors() {
    let with = |reason: &str, parts: Value| {
        parse_response(
            &json!({"candidates": [{"content": {"parts": parts}, "finishReason": reason}]}),
        )
    };
    let text = json!([{"text": "hi"}]);
    assert_eq!(
        with("STOP", text.clone()).expect("ok").stop,
        StopReason::EndTurn
    );
    assert_eq!(
        with("MAX_TOKENS", text.clone()).expect("ok").stop,
        StopReason::MaxTokens
    );
    assert_eq!(
        with("SAFETY", text).expect("partial text").stop,
        StopReason::Other("safety".into())
    );
    let err = with("SAFETY", json!([]))
        .expect_err("nothing to answer with")
        .to_string();
    assert!(
        err.starts_with("gemini: ") && err.contains("finishReason SAFETY"),
        "{err}"
    );
    let err = parse_response(&json!({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: calc(x=)"}]}))
        .expect_err("refused call")
        .to_string();
    assert!(
        err.contains("MALFORMED_FUNCTION_CALL") && err.contains("calc(x=)"),
        "{err}"
    );
    let err = parse_response(&json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 4}}))
        .expect_err("blocked prompt")
        .to_string();
    assert!(
        err.contains("blocked the prompt (blockReason PROHIBITED_CONTENT)"),
        "{err}"
    );
}

#[test]
fn malformed_replies_are_errors_naming_the_wire_never_panics() {
    for bad in [
        json!([]),
        json!({}),
        json!({"candidates": "no"}),
        json!({"candidates": [{"content": {"parts": {"text": "x"}}}]}),
        json!({"candidates": [{"content": {"parts": ["x"]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}),
        json!({"candidates": [{"content": {"parts": [{"functionCall": {"name": "calc", "args": [1]}}]}}]}),
        json!({"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}),
    ] {
        let err = parse_response(&bad).expect_err("malformed").to_string();
        assert!(err.starts_with("gemini: "), "{bad}: {err}");
    }
    let err = parse_sse("data: {\"candidates\": [\n\n", &quiet()).expect_err("bad chunk");
    assert!(
        err.to_string()
            .starts_with("gemini: malformed reply: bad stream chunk"),
        "{err}"
    );
}

#[test]
fn a_stream_assembles_text_deltas_whole_calls_and_the_last_signature() {
    let stream = concat!(
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}], \"role\": \"model\"}, \"index\": 0}], \"usageMetadata\": {\"promptTokenCount\": 9}}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"lo\"}], \"role\": \"model\"}, \"index\": 0}]}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"functionCall\": {\"name\": \"calc\", \"args\": {\"x\": 1}, \"id\": \"a\"}, \"thoughtSignature\": \"c2ln\"}], \"role\": \"model\"}, \"index\": 0}]}\r\n\r\n",
        "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"\", \"thoughtSignature\": \"dGV4dA==\"}], \"role\": \"model\"}, \"finishReason\": \"STOP\", \"index\": 0}], \"usageMetadata\": {\"promptTokenCount\": 9, \"candidatesTokenCount\": 5, \"thoughtsTokenCount\": 2}}\r\n\r\n",
    );
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let into = seen.clone();
    let sink: TextSink = std::sync::Arc::new(move |t: &str| {
        into.lock().expect("sink").push(t.to_string());
    });
    let reply = parse_sse(stream, &sink).expect("stream");
    assert_eq!(*seen.lock().expect("sink"), ["Hel", "lo"]);
    assert_eq!(reply.text, "Hello");
    assert_eq!(reply.tool_calls, vec![call("a", json!({"x": 1}))]);
    assert_eq!(reply.stop, StopReason::ToolUse);
    assert_eq!(reply.usage.output_tokens, 7);
    assert_eq!(
        reply.replay.expect("signed").data,
        json!({"text": "dGV4dA==", "calls": ["c2ln"]})
    );
    // A stream cut before its finish reason is a transport error, not a short answer.
    let cut = "data: {\"candidates\": [{\"content\": {\"parts\": [{\"text\": \"Hel\"}]}}]}\n\n";
    let err = parse_sse(cut, &quiet()).expect_err("cut").to_string();
    assert!(err.contains("before a finishReason"), "{err}");
}

#[test]
fn incremental_bytes_match_the_whole_render_with_signed_turns() {
    let reply = parse_response(&signed_reply()).expect("reply");
    let provider = Gemini {
        endpoint: crate::Endpoint {
            base_url: DEFAULT_BASE_URL.into(),
            api_key: Some("k".into()),
            key_var: None,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            limits: crate::Limits::default(),
        },
        rendered: Rendered::default(),
    };
    let mut messages = vec![Message::user("\"contents\":[] \"tools\":null")];
    for round in 0..3 {
        let mut req = request(&messages);
        req.unchanged_prefix = messages.len().saturating_sub(2);
        let sent = provider.request_bytes(&req);
        assert_eq!(
            String::from_utf8(sent).expect("utf-8"),
            request_body(&req).to_string(),
            "round {round}"
        );
        messages.push(Message::Assistant {
            content: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            replay: reply.replay.clone(),
        });
        messages.push(Message::Tool {
            results: vec![ToolResult {
                call_id: "gemini_call_0".into(),
                name: "calc".into(),
                content: "{\"ok\":true}".into(),
                is_error: false,
            }],
        });
    }
    assert_eq!(
        provider.url("models/gemini-2.5-flash", true),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
}

#[test]
fn attachments_are_inline_data_or_file_data_parts_after_the_text() {
    use crate::attach::tests::{by_url, pdf, plain, png, user};
    let convo = [user(
        "look",
        vec![png(), by_url(pdf(), "https://e.com/r.pdf")],
    )];
    let body = request_body(&plain(&convo));
    let parts = &body["contents"][0]["parts"];
    assert_eq!(parts[0], json!({"text": "look"}));
    assert_eq!(
        parts[1],
        json!({"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}})
    );
    assert_eq!(
        parts[2],
        json!({"fileData": {"mimeType": "application/pdf", "fileUri": "https://e.com/r.pdf"}})
    );
    let none = request_body(&plain(&[user("look", vec![])]));
    assert_eq!(none["contents"][0]["parts"], json!([{"text": "look"}]));
}
