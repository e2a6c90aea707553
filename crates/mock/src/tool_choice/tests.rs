//! The tool-choice checks accept what kiln (and the services' SDKs) send and refuse what the
//! services refuse, with their statuses and the field named.

use super::*;
use serde_json::json;

fn openai_tools() -> Value {
    json!([{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}])
}

#[test]
fn chat_completions_takes_its_choices_with_tools_and_a_named_tool_offered() {
    let with = |choice: Value, parallel: Value| {
        openai(
            &json!({"tools": openai_tools(), "tool_choice": choice, "parallel_tool_calls": parallel}),
        )
    };
    for ok in [
        json!(null),
        json!("auto"),
        json!("none"),
        json!("required"),
        json!({"type": "function", "function": {"name": "calc"}}),
        json!({"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}),
    ] {
        assert!(with(ok.clone(), json!(false)).is_ok(), "{ok}");
    }
    let (status, err) = with(
        json!({"type": "function", "function": {"name": "mul"}}),
        json!(null),
    )
    .expect_err("a tool not offered");
    assert_eq!(
        (status, &err["error"]["param"]),
        (400, &json!("tool_choice"))
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("mul"),
        "{err}"
    );
    for bad in [
        json!("always"),
        json!({"type": "function", "name": "calc"}),
        json!(3),
    ] {
        assert_eq!(
            with(bad.clone(), json!(null)).map_err(|e| e.0),
            Err(400),
            "{bad}"
        );
    }
    assert_eq!(with(json!(null), json!("no")).map_err(|e| e.0), Err(400));
    let (_, err) = openai(&json!({"tool_choice": "required"})).expect_err("no tools");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("only allowed when 'tools'")
    );
    let (_, err) = openai(&json!({"parallel_tool_calls": false})).expect_err("no tools");
    assert_eq!(err["error"]["param"], "parallel_tool_calls");
}

#[test]
fn responses_takes_flat_named_choices_of_its_function_tools() {
    let tools = json!([{"type": "function", "name": "calc", "parameters": {}}]);
    let with = |choice: Value| {
        responses(&json!({"tools": tools, "tool_choice": choice, "parallel_tool_calls": true}))
    };
    for ok in [
        json!("none"),
        json!("required"),
        json!({"type": "function", "name": "calc"}),
        json!({"type": "file_search"}),
    ] {
        assert!(with(ok.clone()).is_ok(), "{ok}");
    }
    for bad in [
        json!({"type": "function", "name": "mul"}),
        json!({"type": "function"}),
        json!("sometimes"),
        json!([]),
    ] {
        assert_eq!(with(bad.clone()).map_err(|e| e.0), Err(400), "{bad}");
    }
    assert!(responses(&json!({"parallel_tool_calls": true})).is_err());
}

#[test]
fn anthropic_takes_its_typed_choices_and_one_call_where_a_choice_calls() {
    let tools = json!([{"name": "calc", "input_schema": {"type": "object"}}]);
    let with = |choice: Value| anthropic(&json!({"tools": tools, "tool_choice": choice}));
    for ok in [
        json!({"type": "auto", "disable_parallel_tool_use": true}),
        json!({"type": "any"}),
        json!({"type": "tool", "name": "calc", "disable_parallel_tool_use": false}),
        json!({"type": "none"}),
    ] {
        assert!(with(ok.clone()).is_ok(), "{ok}");
    }
    let (status, err) = with(json!({"type": "tool", "name": "mul"})).expect_err("not offered");
    assert_eq!(
        (status, &err["error"]["type"]),
        (400, &json!("invalid_request_error"))
    );
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("'mul' not found")
    );
    for bad in [
        json!({"type": "required"}),
        json!({"type": "tool"}),
        json!("auto"),
        json!({"type": "none", "disable_parallel_tool_use": true}),
        json!({"type": "any", "disable_parallel_tool_use": "yes"}),
    ] {
        assert_eq!(with(bad.clone()).map_err(|e| e.0), Err(400), "{bad}");
    }
    assert!(anthropic(&json!({"tool_choice": {"type": "any"}})).is_err());
    assert!(anthropic(&json!({"tool_choice": {"type": "none"}})).is_ok());
}

#[test]
fn gemini_takes_its_modes_and_only_declared_functions_allowed_under_any() {
    let tools = json!([{"functionDeclarations": [{"name": "calc"}]}]);
    let with = |config: Value| {
        gemini(&json!({"tools": tools, "toolConfig": {"functionCallingConfig": config}}))
    };
    for ok in [
        json!({"mode": "AUTO"}),
        json!({"mode": "NONE"}),
        json!({"mode": "ANY"}),
        json!({"mode": "ANY", "allowedFunctionNames": ["calc"]}),
    ] {
        assert!(with(ok.clone()).is_ok(), "{ok}");
    }
    // snake_case spelling too, as the API reads protobuf JSON.
    assert!(gemini(&json!({"tools": tools, "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["calc"]}}})).is_ok());
    for bad in [
        json!({"mode": "FORCE"}),
        json!({"mode": "AUTO", "allowedFunctionNames": ["calc"]}),
        json!({"mode": "ANY", "allowedFunctionNames": ["mul"]}),
    ] {
        let (status, err) = with(bad.clone()).expect_err("refused");
        assert_eq!(
            (status, &err["error"]["status"]),
            (400, &json!("INVALID_ARGUMENT")),
            "{bad}"
        );
    }
}

#[test]
fn converse_takes_one_choice_member_naming_a_tool_offered() {
    let tools = json!([{"toolSpec": {"name": "calc", "inputSchema": {"json": {}}}}]);
    let with =
        |choice: Value| bedrock(&json!({"toolConfig": {"tools": tools, "toolChoice": choice}}));
    for ok in [
        json!({"auto": {}}),
        json!({"any": {}}),
        json!({"tool": {"name": "calc"}}),
    ] {
        assert!(with(ok.clone()).is_ok(), "{ok}");
    }
    for bad in [
        json!({"tool": {"name": "mul"}}),
        json!({"none": {}}),
        json!({"auto": {}, "any": {}}),
        json!({"tool": {}}),
        json!("auto"),
    ] {
        let (status, kind, _) = with(bad.clone()).expect_err("refused");
        assert_eq!((status, kind), (400, "ValidationException"), "{bad}");
    }
}
