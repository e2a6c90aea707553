//! Tests of the OpenAI wire: the bytes sent, the stream chunks read.

use super::*;
use crate::{CallArgs, ToolCall, ToolDef, ToolResult};

fn request(messages: &[Message]) -> ModelRequest<'_> {
    ModelRequest {
        model: "m\"messages\":[".into(),
        system: Some("be brief".into()),
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
fn tool_choice_and_parallel_calls_render_as_chat_completions_takes_them() {
    use crate::ToolChoice;
    // The choice is the request's, not the conversation's: none is needed.
    let messages: [Message; 0] = [];
    let body = |choice: ToolChoice, parallel: Option<bool>| {
        let mut req = request(&messages);
        (req.tool_choice, req.parallel_tool_calls) = (choice, parallel);
        request_body(&req, true)
    };
    // The default sends neither field: the bytes are what they were before the fields.
    let plain = body(ToolChoice::Auto, None);
    assert!(plain.get("tool_choice").is_none() && plain.get("parallel_tool_calls").is_none());
    assert_eq!(body(ToolChoice::None, None)["tool_choice"], "none");
    assert_eq!(body(ToolChoice::Required, None)["tool_choice"], "required");
    let forced = body(ToolChoice::Tool("calc".into()), Some(false));
    assert_eq!(
        forced["tool_choice"],
        json!({"type": "function", "function": {"name": "calc"}})
    );
    assert_eq!(forced["parallel_tool_calls"], false);
    assert_eq!(
        body(ToolChoice::Auto, Some(true))["parallel_tool_calls"],
        true
    );
    // Without tools the API refuses both fields, so neither goes.
    let mut bare = request(&messages);
    (bare.tools, bare.tool_choice, bare.parallel_tool_calls) =
        (Vec::new(), ToolChoice::Required, Some(false));
    let bare = request_body(&bare, true);
    assert!(bare.get("tool_choice").is_none() && bare.get("parallel_tool_calls").is_none());
    // The cached rendering sends the same, the choice changing from one request to the next.
    let rendered = Rendered::default();
    for choice in [
        ToolChoice::Tool("calc".into()),
        ToolChoice::Auto,
        ToolChoice::None,
    ] {
        let mut req = request(&messages);
        (req.tool_choice, req.parallel_tool_calls) = (choice, Some(false));
        let sent: Value =
            serde_json::from_slice(&request_bytes(&req, false, &rendered)).expect("json");
        assert_eq!(sent, request_body(&req, false));
    }
}

#[test]
fn usual_stream_chunks_read_typed_as_they_read_as_values() {
    use crate::sse::StreamState as _;
    let chunks = [
        r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":"Hé \"x\""},"finish_reason":null}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"calc","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_2","function":{"name":"mul","arguments":"{}"}},{"index":0,"function":{"arguments":"1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"content":null,"tool_calls":null},"finish_reason":"tool_calls"}],"usage":null}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}"#,
    ];
    let sink: TextSink = std::sync::Arc::new(|_: &str| {});
    let (mut typed, mut values) = (StreamState::default(), StreamState::default());
    for c in chunks {
        assert!(typed.apply_typed(c, &sink), "read typed: {c}");
        values.apply_value(c, &sink).expect("reads as a value");
    }
    assert_eq!(
        typed.finish().expect("typed"),
        values.finish().expect("values")
    );
    // Odd shapes are left to the lenient reading, which names what is wrong.
    for odd in [
        r#"{"choices":[{"delta":{"content":5}}]}"#,
        r#"{"choices":[{"delta":null}]}"#,
        r#"{"error":{"message":"overloaded"}}"#,
        r#"{"usage":{}}"#,
        r#"["choices"]"#,
    ] {
        assert!(!StreamState::default().apply_typed(odd, &sink), "{odd}");
    }
}

#[test]
fn bytes_sent_match_the_body_round_after_round_and_after_an_edit() {
    let rendered = Rendered::default();
    let mut messages = vec![Message::user("hi")];
    let turns = [
        Message::Assistant {
            replay: None,
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "calc".into(),
                args: CallArgs::from_text("{\"x\": 1}"),
            }],
        },
        Message::Tool {
            results: vec![
                ToolResult {
                    call_id: "c1".into(),
                    name: "calc".into(),
                    content: "2".into(),
                    is_error: false,
                };
                2
            ],
        },
        Message::Tool { results: vec![] },
        Message::Assistant {
            replay: None,
            content: "done".into(),
            tool_calls: vec![],
        },
    ];
    let same = |messages: &[Message]| {
        let sent: Value =
            serde_json::from_slice(&request_bytes(&request(messages), false, &rendered))
                .expect("valid JSON");
        assert_eq!(sent, request_body(&request(messages), false));
    };
    same(&messages);
    for m in turns {
        messages.push(m);
        same(&messages);
    }
    // A different conversation through the same provider (the planner's fresh prompt).
    messages.truncate(1);
    messages[0] = Message::user("other");
    same(&messages);
    // Other tools, then none.
    let mut other = request(&messages);
    other.tools[0].name = "mul".into();
    let sent: Value =
        serde_json::from_slice(&request_bytes(&other, true, &rendered)).expect("valid JSON");
    assert_eq!(sent, request_body(&other, true));
    other.tools.clear();
    let sent: Value =
        serde_json::from_slice(&request_bytes(&other, true, &rendered)).expect("valid JSON");
    assert_eq!(sent, request_body(&other, true));
}

#[test]
fn a_promised_prefix_is_reused_without_comparing_and_the_rest_is_checked() {
    let rendered = Rendered::default();
    let mut messages = vec![Message::user("hi")];
    let mut sent_before = 0;
    for i in 0..5 {
        let mut req = request(&messages);
        req.unchanged_prefix = sent_before;
        let sent: Value =
            serde_json::from_slice(&request_bytes(&req, false, &rendered)).expect("valid JSON");
        assert_eq!(sent, request_body(&request(&messages), false), "round {i}");
        sent_before = messages.len();
        messages.push(Message::Assistant {
            replay: None,
            content: format!("turn {i}"),
            tool_calls: vec![],
        });
    }
    // What lies beyond the promise is compared: an edited last message is rendered again.
    let last = messages.len() - 1;
    messages[last] = Message::Assistant {
        replay: None,
        content: "edited".into(),
        tool_calls: vec![],
    };
    let mut req = request(&messages);
    req.unchanged_prefix = last;
    let sent: Value =
        serde_json::from_slice(&request_bytes(&req, false, &rendered)).expect("valid JSON");
    assert_eq!(sent["messages"][last + 1]["content"], "edited");
    // The promise is taken at its word: that is what makes a long conversation cheap.
    messages[0] = Message::user("not compared");
    let mut req = request(&messages);
    req.unchanged_prefix = 1;
    let sent: Value =
        serde_json::from_slice(&request_bytes(&req, false, &rendered)).expect("valid JSON");
    assert_eq!(sent["messages"][1]["content"], "hi");
}

#[test]
fn usual_whole_replies_read_typed_as_they_read_as_values_and_odd_ones_go_the_value_way() {
    let usual = [
        json!({"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 3, "completion_tokens": 1}}),
        json!({"id": "x", "choices": [{"index": 0, "message": {"content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "calc", "arguments": "{\"x\":1}"}},
            {"type": "function", "function": {"name": "calc", "arguments": null}},
            {"id": "c3", "function": {"name": "calc", "arguments": "not json"}}]},
            "finish_reason": "tool_calls"}]}),
        json!({"choices": [{"message": {"content": "cut"}, "finish_reason": "length"}], "usage": null}),
    ];
    for v in usual {
        let bytes = v.to_string().into_bytes();
        assert_eq!(
            typed_reply(&bytes),
            Some(parse_response(&v).expect("parses")),
            "{v}"
        );
    }
    let odd = [
        json!({"error": {"message": "overloaded"}}),
        json!({"choices": []}),
        json!({"choices": [{"message": {"tool_calls": [{"function": {"name": "calc", "arguments": {"x": 1}}}]}}]}),
        json!({"choices": [{"message": {"content": [{"type": "text", "text": "parts"}]}}]}),
    ];
    for v in odd {
        assert_eq!(typed_reply(v.to_string().as_bytes()), None, "{v}");
    }
}

#[test]
fn an_output_schema_is_a_response_format_for_openai_only_and_tools_stay() {
    let messages = [Message::user("who?")];
    let mut req = request(&messages);
    let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
    req.output = Some(schema.clone());
    let official: Value = serde_json::from_slice(&request_bytes(&req, true, &Rendered::default()))
        .expect("valid JSON");
    assert_eq!(official["response_format"]["type"], "json_schema");
    assert_eq!(official["response_format"]["json_schema"]["schema"], schema);
    assert_eq!(
        official["tools"][0]["function"]["name"], "calc",
        "tools stay offered"
    );
    let compatible: Value =
        serde_json::from_slice(&request_bytes(&req, false, &Rendered::default()))
            .expect("valid JSON");
    assert!(compatible.get("response_format").is_none(), "{compatible}");
}

#[test]
fn attachments_are_image_url_and_file_parts_after_the_text() {
    use crate::attach::tests::{by_url, pdf, plain, png, user};
    let convo = [user(
        "look",
        vec![by_url(png(), "https://e.com/p.png"), pdf(), png()],
    )];
    let body = request_body(&plain(&convo), true);
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "look"}));
    assert_eq!(
        content[1],
        json!({"type": "image_url", "image_url": {"url": "https://e.com/p.png"}})
    );
    assert_eq!(
        content[2],
        json!({"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "report v2.pdf"}})
    );
    assert_eq!(
        content[3]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    let none = request_body(&plain(&[user("look", vec![])]), true);
    assert_eq!(
        none["messages"][0],
        json!({"role": "user", "content": "look"})
    );
}

#[test]
fn a_part_written_from_fields_is_the_text_of_its_values() {
    let call = |id: &str, args: CallArgs| ToolCall {
        id: id.into(),
        name: "calc".into(),
        args,
    };
    let parsed = |v: Value| CallArgs::Parsed(v.into());
    let invalid = CallArgs::Invalid {
        raw: "{\"x\": 1,".into(),
        error: "EOF".into(),
    };
    let result = |id: &str, content: &str| ToolResult {
        call_id: id.into(),
        name: "calc".into(),
        content: content.into(),
        is_error: false,
    };
    let assistant = |content: &str, tool_calls: Vec<ToolCall>| Message::Assistant {
        content: content.into(),
        tool_calls,
        replay: None,
    };
    let messages = [
        Message::user("plain"),
        Message::user("quotes \" and \\ and\nnew lines, tabs\t, é, 😀, \u{1}"),
        Message::user(""),
        assistant("", vec![]),
        assistant("only text", vec![]),
        assistant(
            "",
            vec![call("call_1", parsed(json!({"x": 1, "y": [1.5, "a\"b"]})))],
        ),
        assistant(
            "text and calls",
            vec![call("call 2/odd", parsed(json!(null))), call("c3", invalid)],
        ),
        Message::Tool { results: vec![] },
        Message::Tool {
            results: vec![
                result("call_1", "2"),
                result("call 2/odd", "{\"ok\": \"é\"}"),
            ],
        },
    ];
    for m in &messages {
        let mut values = Vec::new();
        wire_messages(m, &mut values);
        assert_eq!(part::part(m), rendered::joined(&values), "{m:?}");
    }
}
