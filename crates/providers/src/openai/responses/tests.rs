//! Tests of the Responses wire: the bytes sent (input items, reasoning sent back), whole replies
//! and streams read, Azure's routes and headers.

use super::*;
use crate::sse::StreamState as _;
use crate::{CallArgs, StopReason, ToolCall, ToolDef, ToolResult, Usage};

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        model: "m\"input\":[".into(),
        system: Some("be brief \"input\":[]".into()),
        messages: messages.into(),
        tools: vec![ToolDef {
            name: "calc".into(),
            description: "adds".into(),
            schema: json!({"type": "object", "properties": {"x": {"type": "integer"}}}).into(),
            deferred: false,
        }],
        temperature: Some(0.5),
        max_tokens: 10,
        stream: true,
        unchanged_prefix: 0,
        output: None,
        tool_choice: Default::default(),
        parallel_tool_calls: None,
    }
}

#[test]
fn tool_choice_and_parallel_calls_render_flat_on_responses_and_on_azure() {
    // The choice is the request's, not the conversation's: none is needed.
    let messages: [Message; 0] = [];
    let req = |choice: ToolChoice, parallel: Option<bool>| {
        let mut req = request(&messages);
        (req.tool_choice, req.parallel_tool_calls) = (choice, parallel);
        req
    };
    let plain = request_body(&req(ToolChoice::Auto, None));
    assert!(plain.get("tool_choice").is_none() && plain.get("parallel_tool_calls").is_none());
    let none = request_body(&req(ToolChoice::None, Some(true)));
    assert_eq!(
        (&none["tool_choice"], &none["parallel_tool_calls"]),
        (&json!("none"), &json!(true))
    );
    assert_eq!(
        request_body(&req(ToolChoice::Required, None))["tool_choice"],
        "required"
    );
    let forced = request_body(&req(ToolChoice::Tool("calc".into()), Some(false)));
    assert_eq!(
        forced["tool_choice"],
        json!({"type": "function", "name": "calc"})
    );
    assert_eq!(forced["parallel_tool_calls"], false);
    let mut bare = req(ToolChoice::Required, Some(false));
    bare.tools.clear();
    let bare = request_body(&bare);
    assert!(bare.get("tool_choice").is_none() && bare.get("parallel_tool_calls").is_none());
    // The cached rendering sends the whole render's fields; Azure's two routes send OpenAI's.
    let azure = |api| crate::openai::azure::Azure {
        endpoint: crate::Endpoint {
            base_url: "https://res.openai.azure.com".into(),
            api_key: Some("k".into()),
            key_var: None,
            timeout: std::time::Duration::from_secs(1),
            max_retries: 0,
            limits: crate::Limits::default(),
        },
        auth: crate::openai::azure::Auth::ApiKey,
        api_version: "v".into(),
        deployment: "d".into(),
        api,
    };
    let (chat, resp) = (
        azure(crate::openai::azure::Api::Chat(Default::default())),
        azure(crate::openai::azure::Api::Responses(Default::default())),
    );
    let rendered = Rendered::default();
    for choice in [
        ToolChoice::Tool("calc".into()),
        ToolChoice::Auto,
        ToolChoice::Required,
    ] {
        let req = req(choice, Some(false));
        let sent: Value = serde_json::from_slice(&request_bytes(&req, &rendered)).expect("json");
        assert_eq!(sent, request_body(&req));
        let sent: Value = serde_json::from_slice(&resp.request_bytes(&req)).expect("json");
        assert_eq!(sent, request_body(&req));
        let sent: Value = serde_json::from_slice(&chat.request_bytes(&req)).expect("json");
        assert_eq!(sent, crate::openai::chat::request_body(&req, true));
    }
    let sent: Value =
        serde_json::from_slice(&chat.request_bytes(&req(ToolChoice::Tool("calc".into()), None)))
            .expect("json");
    assert_eq!(sent["tool_choice"]["function"]["name"], "calc");
}

fn sink() -> TextSink {
    std::sync::Arc::new(|_: &str| {})
}

/// A reply with a reasoning item, a message and a function call, as the API sends them.
fn reasoning_reply() -> Value {
    json!({"id": "resp_1", "object": "response", "status": "completed", "error": null,
        "incomplete_details": null, "output": [
        {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAA-enc-1"},
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
        {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "calc",
         "arguments": "{\"x\":1}", "status": "completed"}],
        "usage": {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 20},
                  "total_tokens": 42}})
}

#[test]
fn a_request_is_input_items_with_tools_flat_and_nothing_stored() {
    let messages = [
        Message::user("hi"),
        Message::Assistant {
            replay: None,
            content: "Let me see.".into(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "calc".into(),
                args: CallArgs::from_text("{\"x\": 1}"),
            }],
        },
        Message::Tool {
            results: vec![ToolResult {
                call_id: "c1".into(),
                name: "calc".into(),
                content: "2".into(),
                is_error: false,
            }],
        },
    ];
    let body = request_body(&request(&messages));
    assert_eq!(body["instructions"], "be brief \"input\":[]");
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["max_output_tokens"], 10);
    assert_eq!(body["stream"], true);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "calc", "description": "adds",
                "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}, "strict": false}])
    );
    assert_eq!(
        body["input"],
        json!([
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Let me see."},
            {"type": "function_call", "call_id": "c1", "name": "calc", "arguments": "{\"x\":1}"},
            {"type": "function_call_output", "call_id": "c1", "output": "2"}
        ])
    );
    assert!(body.get("text").is_none());
}

#[test]
fn bytes_sent_match_the_body_round_after_round() {
    let rendered = Rendered::default();
    let reply = parse_response(&reasoning_reply()).expect("parses");
    let mut messages = vec![Message::user("hi")];
    let [answered, result] = replied(&reply);
    let turns = [
        answered,
        result,
        Message::Assistant {
            replay: None,
            content: "done".into(),
            tool_calls: vec![],
        },
    ];
    let same = |messages: &[Message], rendered: &Rendered| {
        let sent: Value = serde_json::from_slice(&request_bytes(&request(messages), rendered))
            .expect("valid JSON");
        assert_eq!(sent, request_body(&request(messages)));
    };
    same(&messages, &rendered);
    for m in turns {
        messages.push(m);
        same(&messages, &rendered);
    }
    let mut other = request(&messages);
    other.tools.clear();
    other.output = Some(json!({"type": "object"}));
    let sent: Value =
        serde_json::from_slice(&request_bytes(&other, &rendered)).expect("valid JSON");
    assert_eq!(sent, request_body(&other));
    assert_eq!(sent["text"]["format"]["type"], "json_schema");
    assert_eq!(sent["text"]["format"]["schema"], json!({"type": "object"}));
    assert!(sent.get("tools").is_none());
}

#[test]
fn a_reasoning_item_goes_back_before_its_turns_calls_with_their_ids() {
    let reply = parse_response(&reasoning_reply()).expect("parses");
    assert_eq!(reply.usage.reasoning_tokens, 20);
    let replay = reply.replay.clone().expect("reasoning is kept");
    assert_eq!(replay.wire, "openai-responses");
    let messages = [
        Message::user("hi"),
        Message::Assistant {
            replay: Some(replay),
            content: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
        },
        Message::Tool {
            results: vec![ToolResult {
                call_id: "call_1".into(),
                name: "calc".into(),
                content: "2".into(),
                is_error: false,
            }],
        },
    ];
    let input = &request_body(&request(&messages))["input"];
    let types: Vec<&str> = (input.as_array().expect("list").iter())
        .map(|i| i["type"].as_str().unwrap_or("easy"))
        .collect();
    assert_eq!(
        types,
        [
            "easy",
            "reasoning",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[1]["encrypted_content"], "gAAAA-enc-1");
    assert_eq!(input[3]["id"], "fc_1");
    assert_eq!(input[3]["arguments"], "{\"x\":1}");
    // Another wire's replay is not this wire's: the turn is rendered from the transcript.
    let foreign = [Message::Assistant {
        replay: Some(crate::Replay {
            wire: "gemini".into(),
            data: json!([{"type": "reasoning", "id": "x"}]),
        }),
        content: "hi".into(),
        tool_calls: vec![],
    }];
    let input = &request_body(&request(&foreign))["input"];
    assert_eq!(input, &json!([{"role": "assistant", "content": "hi"}]));
}

#[test]
fn whole_replies_read_text_calls_stop_and_usage() {
    let r = parse_response(&reasoning_reply()).expect("parses");
    assert_eq!(r.text, "Checking.");
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.tool_calls[0].id, "call_1");
    assert_eq!(r.tool_calls[0].args, CallArgs::from_text("{\"x\":1}"));
    assert_eq!(
        r.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 30,
            reasoning_tokens: 20
        }
    );
    let plain = json!({"status": "completed", "output": [{"type": "message", "content": [
        {"type": "output_text", "text": "hi"}]}], "usage": {"input_tokens": 1, "output_tokens": 2}});
    let r = parse_response(&plain).expect("parses");
    assert_eq!(
        (r.text.as_str(), r.stop, r.replay),
        ("hi", StopReason::EndTurn, None)
    );
    let cut = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "par"}]}]});
    assert_eq!(
        parse_response(&cut).expect("parses").stop,
        StopReason::MaxTokens
    );
    let cut_call = json!({"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
        "output": [{"type": "function_call", "call_id": "c", "name": "calc", "arguments": "{\"x\""}]});
    assert!(matches!(
        parse_response(&cut_call),
        Err(ProviderError::Truncated { .. })
    ));
}

#[test]
fn malformed_and_failed_replies_are_errors_naming_the_wire() {
    for (bad, says) in [
        (json!([1]), "not a response object"),
        (json!({"status": "completed"}), "no `output` array"),
        (json!({"output": [{"content": []}]}), "has no `type`"),
        (
            json!({"output": [{"type": "function_call", "call_id": "c"}]}),
            "has no `name`",
        ),
        (
            json!({"output": [{"type": "message", "content": "x"}]}),
            "no `content` array",
        ),
        (
            json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}, "output": []}),
            "server_error: boom",
        ),
        (
            json!({"error": {"message": "nope", "type": "invalid_request_error"}}),
            "nope",
        ),
    ] {
        let err = parse_response(&bad).expect_err("an error").to_string();
        assert!(err.starts_with("openai-responses: "), "{err}");
        assert!(err.contains(says), "{err} should say {says}");
    }
}

fn events(evs: &[Value]) -> String {
    evs.iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap_or("")))
        .collect()
}

#[test]
fn a_stream_assembles_text_and_calls_from_their_events() {
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let t = text.clone();
    let collect: TextSink = std::sync::Arc::new(move |s: &str| t.lock().expect("lock").push_str(s));
    let fc = json!({"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "calc", "arguments": "", "status": "in_progress"});
    let stream = events(&[
        json!({"type": "response.created", "response": {"status": "in_progress", "output": []}, "sequence_number": 0}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "Chec"}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "delta": "king."}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": fc}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"x\""}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": ":1}"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1, "arguments": "{\"x\":1}"}),
        json!({"type": "response.completed", "response": {"status": "completed", "output": [],
            "usage": {"input_tokens": 5, "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 3}}}}),
    ]);
    let r = parse_sse(&stream, &collect).expect("parses");
    assert_eq!(text.lock().expect("lock").as_str(), "Checking.");
    assert_eq!(r.text, "Checking.");
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "call_1");
    assert_eq!(r.tool_calls[0].args, CallArgs::from_text("{\"x\":1}"));
    assert_eq!(r.stop, StopReason::ToolUse);
    assert_eq!(r.usage.reasoning_tokens, 3);
    // The completed response's own output wins over what was assembled.
    let whole = events(&[json!({"type": "response.completed", "response": reasoning_reply()})]);
    let r = parse_sse(&whole, &sink()).expect("parses");
    assert_eq!(
        r.replay.expect("kept").data[0]["encrypted_content"],
        "gAAAA-enc-1"
    );
}

#[test]
fn stream_errors_cuts_and_garbage_are_errors_naming_the_wire() {
    let fc = json!({"id": "fc_1", "type": "function_call", "call_id": "c", "name": "calc", "arguments": ""});
    let cases = [
        (
            events(&[
                json!({"type": "error", "code": "server_error", "message": "overloaded", "param": null}),
            ]),
            "server_error: overloaded",
        ),
        (
            events(&[
                json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "slow down"}}}),
            ]),
            "rate_limit_exceeded: slow down",
        ),
        (
            events(&[json!({"type": "response.output_text.delta", "delta": "x"})]),
            "ended before response.completed",
        ),
        (
            "data: {\"type\": \"response.created\", oops\n\n".to_string(),
            "bad stream event",
        ),
        (events(&[json!({"delta": "x"})]), "without a `type`"),
        (
            events(&[
                json!({"type": "response.output_item.added", "output_index": 0, "item": fc}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"x\""}),
                json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}}),
            ]),
            "max_tokens in the middle of tool call",
        ),
    ];
    for (stream, says) in cases {
        let err = parse_sse(&stream, &sink())
            .expect_err("an error")
            .to_string();
        assert!(err.starts_with("openai-responses: "), "{err}");
        assert!(err.contains(says), "{err} should say {says}");
    }
    let mut state = StreamState::default();
    assert!(state.apply("[DONE]", &sink()).is_ok());
}

#[test]
fn azure_routes_follow_the_sdk_and_the_bodies_are_openais() {
    use crate::openai::azure::{Api, Auth, Azure};
    let endpoint = crate::Endpoint {
        base_url: "https://res.openai.azure.com/".into(),
        api_key: Some("k".into()),
        key_var: Some("AZURE_OPENAI_API_KEY".into()),
        timeout: std::time::Duration::from_secs(1),
        max_retries: 0,
        limits: crate::Limits::default(),
    };
    let chat = Azure {
        endpoint: endpoint.clone(),
        auth: Auth::ApiKey,
        api_version: "2024-10-21".into(),
        deployment: "my gpt".into(),
        api: Api::Chat(Default::default()),
    };
    assert_eq!(
        chat.url(),
        "https://res.openai.azure.com/openai/deployments/my%20gpt/chat/completions?api-version=2024-10-21"
    );
    let messages = [Message::user("hi")];
    let sent: Value =
        serde_json::from_slice(&chat.request_bytes(&request(&messages))).expect("json");
    assert_eq!(
        sent,
        crate::openai::chat::request_body(&request(&messages), true)
    );
    let resp = Azure {
        endpoint,
        auth: Auth::Bearer,
        api_version: "2025-04-01-preview".into(),
        deployment: "d".into(),
        api: Api::Responses(Default::default()),
    };
    assert_eq!(
        resp.url(),
        "https://res.openai.azure.com/openai/responses?api-version=2025-04-01-preview"
    );
    let sent: Value =
        serde_json::from_slice(&resp.request_bytes(&request(&messages))).expect("json");
    assert_eq!(sent, request_body(&request(&messages)));
}

#[test]
fn attachments_are_input_image_and_input_file_parts_after_the_text() {
    use crate::attach::tests::{by_url, pdf, plain, png, user};
    let convo = [user(
        "look",
        vec![png(), pdf(), by_url(pdf(), "https://e.com/r.pdf")],
    )];
    let body = request_body(&plain(&convo));
    let content = &body["input"][0]["content"];
    assert_eq!(content[0], json!({"type": "input_text", "text": "look"}));
    assert_eq!(
        content[1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"})
    );
    assert_eq!(
        content[2],
        json!({"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "report v2.pdf"})
    );
    assert_eq!(
        content[3],
        json!({"type": "input_file", "file_url": "https://e.com/r.pdf"})
    );
    let none = request_body(&plain(&[user("look", vec![])]));
    assert_eq!(none["input"][0], json!({"role": "user", "content": "look"}));
}

#[test]
fn deferred_tools_go_flagged_with_tool_search_and_its_items_go_back_in_place() {
    let messages = [Message::user("weather?")];
    let mut req = request(&messages);
    req.tools[0].deferred = true;
    req.tools.push(ToolDef {
        name: "now".into(),
        deferred: false,
        ..req.tools[0].clone()
    });
    let body = request_body(&req);
    assert_eq!(body["tools"][0]["defer_loading"], true);
    assert!(body["tools"][1].get("defer_loading").is_none());
    assert_eq!(body["tools"][2], json!({"type": "tool_search"}));
    let found = json!({"type": "function", "name": "calc", "description": "adds",
        "parameters": {"type": "object"}, "strict": false, "defer_loading": true});
    let reply = parse_response(
        &json!({"id": "resp_1", "object": "response", "status": "completed",
        "output": [
            {"id": "tsc_1", "type": "tool_search_call", "status": "completed", "call_id": null,
             "execution": "server", "arguments": {"paths": ["calc"]}},
            {"id": "tso_1", "type": "tool_search_output", "status": "completed", "call_id": null,
             "execution": "server", "tools": [found]},
            {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1",
             "name": "calc", "arguments": "{\"x\":1}"}],
        "usage": {"input_tokens": 9, "output_tokens": 4}}),
    )
    .expect("parses");
    assert_eq!(reply.tool_calls.len(), 1);
    let [answered, result] = replied(&reply);
    let messages = [Message::user("weather?"), answered, result];
    let mut req = request(&messages);
    req.tools[0].deferred = true;
    let input = &request_body(&req)["input"];
    let types: Vec<&str> = (input.as_array().expect("list").iter())
        .map(|i| i["type"].as_str().unwrap_or("user"))
        .collect();
    let order = [
        "user",
        "tool_search_call",
        "tool_search_output",
        "function_call",
    ];
    assert_eq!(types, [&order[..], &["function_call_output"]].concat());
    assert_eq!(input[2]["tools"][0], found);
    let sent: Value =
        serde_json::from_slice(&request_bytes(&req, &Rendered::default())).expect("valid JSON");
    assert_eq!(sent, request_body(&req));
}

/// `reply` as the assistant's message, then the result of its call `call_1` of `calc`.
fn replied(reply: &crate::ModelResponse) -> [Message; 2] {
    [
        Message::Assistant {
            replay: reply.replay.clone(),
            content: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
        },
        Message::Tool {
            results: vec![ToolResult {
                call_id: "call_1".into(),
                name: "calc".into(),
                content: "2".into(),
                is_error: false,
            }],
        },
    ]
}
