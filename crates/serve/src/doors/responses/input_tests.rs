//! Reading Responses requests: items into a conversation, refusals by path.

use super::*;

fn appended(items: Value) -> Result<Vec<Message>, ApiError> {
    let mut messages = Vec::new();
    let mut system = Vec::new();
    append_items(&mut messages, items.as_array().unwrap(), &mut system)?;
    Ok(messages)
}

#[test]
fn a_client_round_trip_becomes_one_assistant_turn_and_its_results() {
    let messages = appended(json!([
        {"type": "message", "role": "user", "content": "weather?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"location\":\"SF\"}"},
        {"type": "mcp_call", "id": "k1", "server_label": "kiln", "name": "lookup", "arguments": "{}", "output": "42"},
        {"type": "function_call_output", "call_id": "c1", "output": "64 and clear"},
    ]))
    .unwrap();
    assert_eq!(messages.len(), 3);
    let Message::Assistant { tool_calls, .. } = &messages[1] else {
        panic!()
    };
    assert_eq!(
        tool_calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
        ["c1", "k1"]
    );
    let Message::Tool { results } = &messages[2] else {
        panic!()
    };
    // In call order, whatever order the outputs came in.
    assert_eq!(results[0].call_id, "c1");
    assert_eq!(results[0].content, "64 and clear");
    assert_eq!(results[1].content, "42");
    let (history, prompt, _) = split_prompt(messages).unwrap();
    assert_eq!((history.len(), prompt.as_str()), (3, ""));
}

#[test]
fn an_unanswered_or_unknown_call_is_refused_by_path() {
    let e = appended(json!([
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "message", "role": "user", "content": "and?"},
    ]))
    .unwrap_err();
    assert!(e.body().to_string().contains("c1"), "{:?}", e.body());
    let e = appended(json!([
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "nope", "output": "x"},
    ]))
    .unwrap_err();
    assert_eq!(e.body()["error"]["param"], "input[1].call_id");
    let e = appended(json!([{"type": "message", "role": "robot", "content": "x"}])).unwrap_err();
    assert_eq!(e.body()["error"]["param"], "input[0].role");
}

#[test]
fn the_request_reads_with_its_defaults_and_refuses_bad_fields() {
    let r = parse(&json!({"model": "helper", "input": "hi"})).unwrap();
    assert!(r.store);
    assert_eq!(r.echo.tool_choice, "auto");
    assert_eq!(r.input_items[0]["role"], "user");
    let e = parse(&json!({"model": "helper", "input": "hi", "tools": [{"type": "web_search"}]}))
        .err()
        .unwrap();
    assert_eq!(e.body()["error"]["param"], "tools[0].type");
    let e = parse(&json!({"model": "helper", "input": []}))
        .err()
        .unwrap();
    assert_eq!(e.body()["error"]["param"], "input");
    let e = parse(&json!({"model": "helper", "input": "x", "metadata": {"a": 1}}))
        .err()
        .unwrap();
    assert_eq!(e.body()["error"]["param"], "metadata");
    let e = parse(&json!({"model": "helper", "input": "x", "background": true}))
        .err()
        .unwrap();
    assert_eq!(e.body()["error"]["param"], "background");
    assert!(parse(&json!({"model": "helper", "input": "x", "background": false})).is_ok());
}
