use super::*;
use serde_json::json;

fn turns(v: Value) -> Vec<Turn> {
    serde_json::from_value(v).expect("turns")
}

fn pick(t: &[Turn], round: usize, body: &Value, url: Option<&str>) -> Option<usize> {
    by_round(t, round, false, &Request::of(body, url))
}

fn weather_scenario() -> Vec<Turn> {
    turns(json!([
        {"offered": "get_weather", "tool_calls": [{"name": "get_weather", "args": {"location": "SF"}}]},
        {"text": "It is sunny."}
    ]))
}

/// The eval scenario of the docs: "weak" gets case 3 wrong, everything else is right.
fn eval_scenario() -> Vec<Turn> {
    turns(json!([
        {"model": "weak", "user": "case 3", "text": "wrong"},
        {"user": "case 3", "text": "right 3"},
        {"user": "case 1", "text": "right 1"},
        {"text": "default"}
    ]))
}

#[test]
fn openai_chat_and_ollama_read_the_first_user_message_string_or_parts() {
    let chat = json!({"model": "gpt", "messages": [
        {"role": "system", "content": "be brief (case 9)"},
        {"role": "user", "content": "case 3: add"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "case 4"}
    ]});
    let r = Request::of(&chat, None);
    assert_eq!(r.user.as_deref(), Some("case 3: add"));
    assert_eq!(r.models, ["gpt"]);
    let parts = json!({"messages": [{"role": "user", "content": [
        {"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "case 3"}
    ]}]});
    assert_eq!(first_user_text(&parts).as_deref(), Some("look\ncase 3"));
}

#[test]
fn responses_reads_an_input_string_or_the_first_user_item() {
    let plain = json!({"model": "m", "input": "case 3"});
    assert_eq!(first_user_text(&plain).as_deref(), Some("case 3"));
    let items = json!({"input": [
        {"type": "message", "role": "developer", "content": "rules"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "case 3"}]},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "case 4"}
    ]});
    assert_eq!(first_user_text(&items).as_deref(), Some("case 3"));
    let continued = json!({"previous_response_id": "r", "input": [
        {"type": "function_call_output", "call_id": "c", "output": "x"}
    ]});
    assert_eq!(first_user_text(&continued), None);
}

#[test]
fn anthropic_reads_a_string_or_text_blocks_not_tool_results() {
    let string = json!({"model": "claude", "system": "case 9", "messages": [
        {"role": "user", "content": "case 3"}
    ]});
    assert_eq!(first_user_text(&string).as_deref(), Some("case 3"));
    let blocks = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "case 3"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "case 4"}]}
    ]});
    assert_eq!(first_user_text(&blocks).as_deref(), Some("case 3"));
}

#[test]
fn gemini_reads_user_parts_and_its_model_from_the_url() {
    let body = json!({"systemInstruction": {"parts": [{"text": "case 9"}]}, "contents": [
        {"role": "user", "parts": [{"text": "case 3"}, {"inlineData": {"mimeType": "a", "data": ""}}]},
        {"role": "model", "parts": [{"text": "ok"}]}
    ]});
    let r = Request::of(&body, Some("gemini-2.5-flash"));
    assert_eq!(r.user.as_deref(), Some("case 3"));
    assert_eq!(r.models, ["gemini-2.5-flash"]);
    // A content without a role is the user's.
    let roleless = json!({"contents": [{"parts": [{"text": "case 5"}]}]});
    assert_eq!(first_user_text(&roleless).as_deref(), Some("case 5"));
}

#[test]
fn bedrock_reads_text_blocks_and_its_model_from_the_url() {
    let body = json!({"system": [{"text": "case 9"}], "messages": [
        {"role": "user", "content": [{"text": "case 3"}, {"image": {"format": "png"}}]}
    ]});
    let r = Request::of(&body, Some("anthropic.claude-3-haiku"));
    assert_eq!(r.user.as_deref(), Some("case 3"));
    assert_eq!(r.models, ["anthropic.claude-3-haiku"]);
}

#[test]
fn azure_names_its_body_model_and_its_deployment() {
    let body = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]});
    let r = Request::of(&body, Some("prod-4o"));
    assert_eq!(r.models, ["gpt-4o", "prod-4o"]);
    assert_eq!(Request::of(&json!({}), None).models, Vec::<&str>::new());
}

#[test]
fn each_model_and_case_gets_its_own_turn_in_by_round() {
    let t = eval_scenario();
    let ask = |model: &str, prompt: &str| json!({"model": model, "messages": [{"role": "user", "content": prompt}]});
    assert_eq!(pick(&t, 0, &ask("weak", "case 3"), None), Some(0));
    assert_eq!(pick(&t, 0, &ask("good", "case 3"), None), Some(1));
    assert_eq!(pick(&t, 0, &ask("weak", "case 1"), None), Some(2));
    assert_eq!(pick(&t, 0, &ask("good", "case 2"), None), Some(3));
    // The filters are exact: model names as sent, user text case-sensitive.
    assert_eq!(pick(&t, 0, &ask("openai/weak", "case 3"), None), Some(1));
    assert_eq!(pick(&t, 0, &ask("weak", "Case 3"), None), Some(3));
    // Round 1 takes the second fitting turn: weak's case 3 fits 0, 1 and 3.
    assert_eq!(pick(&t, 1, &ask("weak", "case 3"), None), Some(1));
    assert_eq!(pick(&t, 2, &ask("weak", "case 3"), None), Some(3));
    assert_eq!(pick(&t, 3, &ask("weak", "case 3"), None), None);
    // The model in a URL counts as the body's does.
    let gemini = json!({"contents": [{"role": "user", "parts": [{"text": "case 3"}]}]});
    assert_eq!(pick(&t, 0, &gemini, Some("weak")), Some(0));
    assert_eq!(pick(&t, 0, &gemini, Some("good")), Some(1));
}

#[test]
fn a_request_without_a_user_message_fits_only_turns_without_user() {
    let t = eval_scenario();
    let none = json!({"model": "weak", "input": [{"type": "function_call_output", "call_id": "c", "output": "case 3"}]});
    assert_eq!(pick(&t, 0, &none, None), Some(3));
}

#[test]
fn the_cursor_takes_the_next_turn_that_fits_all_filters() {
    let t = turns(json!([
        {"model": "weak", "user": "case 3", "offered": "f", "text": "a"},
        {"model": "weak", "text": "b"},
        {"user": "case 3", "text": "c"}
    ]));
    let body = |model: &str, tools: Value| json!({"model": model, "tools": tools, "messages": [{"role": "user", "content": "case 3"}]});
    let with_f = body("weak", json!([{"name": "f"}]));
    let r = Request::of(&with_f, None);
    assert_eq!(next(&t, 0, false, &r), Some(0));
    let without = body("weak", json!([]));
    assert_eq!(next(&t, 0, false, &Request::of(&without, None)), Some(1));
    let good = body("good", json!([{"name": "f"}]));
    assert_eq!(next(&t, 0, false, &Request::of(&good, None)), Some(2));
    assert_eq!(next(&t, 3, false, &Request::of(&good, None)), None);
    assert_eq!(next(&t, 3, true, &Request::of(&good, None)), Some(5));
}

#[test]
fn unknown_turn_fields_stay_rejected() {
    let err = serde_json::from_value::<Vec<Turn>>(json!([{"modle": "weak", "text": "x"}]));
    assert!(err.is_err());
    let ok = turns(json!([{"model": "weak", "user": "case 3", "text": "x"}]));
    assert_eq!(ok[0].model.as_deref(), Some("weak"));
    assert_eq!(ok[0].user.as_deref(), Some("case 3"));
}

#[test]
fn by_round_counts_only_the_turns_that_fit_the_request() {
    let t = weather_scenario();
    let offers = json!({"tools": [{"type": "function", "name": "get_weather"}]});
    let plain = json!({"input": "hi"});
    let (offers, plain) = (Request::of(&offers, None), Request::of(&plain, None));
    assert_eq!(by_round(&t, 0, false, &offers), Some(0));
    assert_eq!(by_round(&t, 1, false, &offers), Some(1));
    assert_eq!(by_round(&t, 0, false, &plain), Some(1));
    // One turn fits a request without the tool: a second round has none left...
    assert_eq!(by_round(&t, 1, false, &plain), None);
    // ...unless the scenario loops, which wraps among the fitting turns.
    assert_eq!(by_round(&t, 1, true, &plain), Some(1));
    assert_eq!(by_round(&t, 3, true, &offers), Some(1));
    let only = turns(json!([{"offered": "x", "text": "a"}]));
    assert_eq!(by_round(&only, 0, true, &plain), None);
}

#[test]
fn the_cursor_skips_turns_that_do_not_fit() {
    let t = weather_scenario();
    let offers = json!({"tools": [{"type": "function", "function": {"name": "get_weather"}}]});
    let plain = json!({"messages": []});
    let (offers, plain) = (Request::of(&offers, None), Request::of(&plain, None));
    assert_eq!(next(&t, 0, false, &offers), Some(0));
    assert_eq!(next(&t, 0, false, &plain), Some(1));
    assert_eq!(next(&t, 1, false, &offers), Some(1));
    assert_eq!(next(&t, 2, false, &plain), None);
    // Looping, the cursor counts on: 2 is the first turn again, which needs the tool.
    assert_eq!(next(&t, 2, true, &plain), Some(3));
    assert_eq!(next(&t, 2, true, &offers), Some(2));
    assert_eq!(next(&[], 0, true, &plain), None);
    let only = turns(json!([{"offered": "x", "text": "a"}]));
    assert_eq!(next(&only, 0, true, &plain), None);
}

#[test]
fn turns_without_filters_fit_every_request_as_before() {
    let t = turns(json!([{"text": "a"}, {"text": "b"}]));
    let offers = json!({"model": "m", "tools": [{"name": "anything"}]});
    for body in [json!({}), offers] {
        let r = Request::of(&body, Some("url-model"));
        assert_eq!(by_round(&t, 1, false, &r), Some(1));
        assert_eq!(next(&t, 1, false, &r), Some(1));
        assert_eq!(next(&t, 5, true, &r), Some(5));
    }
}

#[test]
fn system_prompts_are_read_on_every_wire_and_filter_turns() {
    let bodies = [
        json!({"model": "m", "messages": [{"role": "system", "content": "be terse v2"}, {"role": "user", "content": "hi"}]}),
        json!({"model": "m", "system": [{"type": "text", "text": "be terse v2"}], "messages": [{"role": "user", "content": "hi"}]}),
        json!({"model": "m", "instructions": "be terse v2", "input": "hi"}),
        json!({"systemInstruction": {"parts": [{"text": "be terse v2"}]}, "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
        json!({"system": [{"text": "be terse v2"}], "messages": [{"role": "user", "content": [{"text": "hi"}]}]}),
    ];
    let t = turns(json!([{"system": "v2", "text": "worse"}, {"text": "better"}]));
    for body in &bodies {
        assert_eq!(system_text(body), "be terse v2", "{body}");
        assert_eq!(pick(&t, 0, body, None), Some(0), "{body}");
    }
    let v1 = json!({"model": "m", "messages": [{"role": "system", "content": "be terse v1"}, {"role": "user", "content": "hi"}]});
    assert_eq!(pick(&t, 0, &v1, None), Some(1));
}
