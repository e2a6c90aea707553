//! What `kiln serve` answers on `/v1/responses` (Response objects, streamed events, input-item
//! lists) validated against OpenAI's OpenAPI schemas; and the validator itself proven on
//! OpenAI's recorded reply and on objects made to break one rule each.

use crate::wires::responses_support::*;
use serde_json::{Value, json};

/// A Response shaped as the issue-44 contract says kiln answers: a kiln tool's call, the
/// answer, a call of the client's function.
fn contract_response() -> Value {
    json!({
        "id": "resp_1", "object": "response", "created_at": 1_764_000_000, "completed_at": 1_764_000_001,
        "status": "completed", "model": "shop", "error": null, "incomplete_details": null,
        "instructions": null, "tools": [discount_tool()], "tool_choice": "auto",
        "parallel_tool_calls": true, "temperature": null, "top_p": null, "metadata": {},
        "output": [
            {"type": "mcp_call", "id": "mcp_1", "server_label": "kiln", "name": "lookup",
             "arguments": "{\"sku\":\"SKU-1\"}", "output": "{\"price\":4.5}", "error": null, "status": "completed"},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hi", "annotations": [], "logprobs": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "discount",
             "arguments": "{\"sku\":\"SKU-1\"}", "status": "completed"}
        ],
        "usage": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5,
                  "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}}
    })
}

/// The schema's required properties of `Response` (through its `allOf`).
fn required_of_response() -> Vec<String> {
    let schemas = &crate::scripts::spec::openai_spec()["components"]["schemas"];
    let mut out = Vec::new();
    let mut parts = vec![&schemas["Response"]];
    while let Some(s) = parts.pop() {
        let s = match s["$ref"].as_str() {
            Some(r) => &schemas[r.rsplit('/').next().unwrap_or(r)],
            None => s,
        };
        let req = s["required"].as_array().into_iter().flatten();
        out.extend(req.filter_map(|r| r.as_str().map(String::from)));
        parts.extend(s["allOf"].as_array().into_iter().flatten());
    }
    out
}

#[test]
fn the_validator_holds_openais_recorded_reply_to_todays_schema() {
    let path = crate::scripts::spec::specs_dir().join("openai/fixtures/responses-output-text.json");
    let text = std::fs::read_to_string(&path).expect("fixture");
    let mut recorded: Value = serde_json::from_str(&text).expect("fixture json");
    // The reply was recorded in 2024; the 2.3.0 schema has since required `cache_write_tokens`
    // and made `user` a string (no null): exactly those two, nothing else.
    let mut errors = response_violations(&recorded);
    errors.sort();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert!(
        errors[0].starts_with("/usage/input_tokens_details: "),
        "{errors:?}"
    );
    assert!(errors[0].contains("cache_write_tokens"), "{errors:?}");
    assert!(
        errors[1].starts_with("/user: null is not of type"),
        "{errors:?}"
    );
    recorded["usage"]["input_tokens_details"]["cache_write_tokens"] = json!(0);
    recorded.as_object_mut().expect("object").remove("user");
    assert_response(&recorded);
}

#[test]
fn the_validator_rejects_a_response_that_breaks_any_rule() {
    let good = contract_response();
    assert_response(&good);
    let required = required_of_response();
    for field in [
        "id",
        "object",
        "created_at",
        "output",
        "model",
        "tools",
        "tool_choice",
    ] {
        assert!(required.iter().any(|r| r == field), "{field}: {required:?}");
    }
    for field in &required {
        let mut bad = good.clone();
        bad.as_object_mut().expect("object").remove(field);
        let errors = response_violations(&bad);
        assert!(
            errors
                .iter()
                .any(|e| e.contains(&format!("\"{field}\" is a required"))),
            "without {field}: {errors:?}"
        );
    }
    let breaks: [(&str, Value); 7] = [
        ("/status", json!("done")),
        ("/object", json!("chat.completion")),
        ("/output/0/error", json!("the tool failed")),
        ("/output/1/content/0/annotations", Value::Null),
        ("/output/2/arguments", json!({"sku": "SKU-1"})),
        ("/usage/input_tokens_details", json!({"cached_tokens": 0})),
        ("/user", Value::Null),
    ];
    for (pointer, value) in breaks {
        let mut bad = good.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        bad.pointer_mut(parent).expect("parent")[key] = value.clone();
        assert!(
            !response_violations(&bad).is_empty(),
            "{pointer} = {value} passed"
        );
    }
    // An item without its id fails, and the failure names the item's own schema.
    let mut bad = good.clone();
    bad["output"][1].as_object_mut().expect("item").remove("id");
    let errors = response_violations(&bad).join("\n");
    assert!(
        errors.contains("as OutputMessage: : \"id\" is a required"),
        "{errors}"
    );
}

/// The events of a streamed answer as the contract lists them: a message, then a call.
fn contract_events() -> Vec<Value> {
    let mut response = contract_response();
    let done = response.clone();
    response["status"] = json!("in_progress");
    response["output"] = json!([]);
    response["completed_at"] = Value::Null;
    let message = done["output"][1].clone();
    let call = done["output"][2].clone();
    let part = json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
    let ids = json!({"item_id": "msg_1", "output_index": 0, "content_index": 0});
    let mut events = vec![
        json!({"type": "response.created", "response": response}),
        json!({"type": "response.in_progress", "response": response}),
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress", "content": []}}),
        json!({"type": "response.content_part.added", "part": part}),
        json!({"type": "response.output_text.delta", "delta": "Hi", "logprobs": []}),
        json!({"type": "response.output_text.done", "text": "Hi", "logprobs": []}),
        json!({"type": "response.content_part.done", "part": message["content"][0]}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": message}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": call}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_1", "output_index": 1, "delta": "{\"sku\":"}),
        json!({"type": "response.function_call_arguments.done", "item_id": "fc_1", "output_index": 1,
               "name": "discount", "arguments": call["arguments"]}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call}),
        json!({"type": "response.completed", "response": done}),
    ];
    for (n, ev) in events.iter_mut().enumerate() {
        ev["sequence_number"] = json!(n);
        if ev["type"]
            .as_str()
            .is_some_and(|t| t.contains("content_part") || t.contains("text"))
        {
            for (k, v) in ids.as_object().expect("ids") {
                ev[k] = v.clone();
            }
        }
    }
    events
}

/// Removes `key` from object `v`.
fn remove(v: &mut Value, key: &str) {
    if let Some(o) = v.as_object_mut() {
        o.remove(key);
    }
}

#[test]
fn the_validator_checks_each_event_against_its_own_schema() {
    let events = contract_events();
    for ev in &events {
        assert_event(ev);
    }
    let bad = |i: usize, f: &dyn Fn(&mut Value)| {
        let mut ev = events[i].clone();
        f(&mut ev);
        event_violations(&ev)
    };
    let no_seq = bad(4, &|e| remove(e, "sequence_number"));
    assert!(
        no_seq[0].contains("\"sequence_number\" is a required"),
        "{no_seq:?}"
    );
    let no_logprobs = bad(4, &|e| remove(e, "logprobs"));
    assert!(
        no_logprobs[0].contains("\"logprobs\" is a required"),
        "{no_logprobs:?}"
    );
    let unknown = bad(12, &|e| e["type"] = json!("response.cancelled"));
    assert_eq!(
        unknown,
        ["response.cancelled: not an event type of ResponseStreamEvent"]
    );
    let bad_item = bad(7, &|e| e["item"]["content"][0]["type"] = json!("text"));
    assert!(bad_item.len() > 1, "{bad_item:?}");
    let bad_response = bad(12, &|e| e["response"]["usage"]["total_tokens"] = json!("5"));
    assert!(
        bad_response[0].starts_with("/response/usage/total_tokens"),
        "{bad_response:?}"
    );
}

#[test]
fn the_validator_checks_input_item_lists() {
    let list = json!({"object": "list", "first_id": "msg_0", "last_id": "fco_1", "has_more": false, "data": [
        {"type": "message", "id": "msg_0", "role": "user", "status": "completed",
         "content": [{"type": "input_text", "text": "Price of SKU-1?"}]},
        {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "10%", "status": "completed"}
    ]});
    assert_item_list(&list);
    for (pointer, value) in [
        ("/has_more", Value::Null),
        ("/first_id", Value::Null),
        ("/data/0/role", json!("tool")),
        ("/data/1/output", json!(10)),
    ] {
        let mut bad = list.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        bad.pointer_mut(parent).expect("parent")[key] = value.clone();
        assert!(
            !item_list_violations(&bad).is_empty(),
            "{pointer} = {value} passed"
        );
    }
}

/// Every schema violation of every answer of one test, reported together at its end (so a
/// failure lists all that is wrong, not the first).
#[derive(Default)]
struct Findings(Vec<String>);

impl Findings {
    /// Notes `errors` of the answer `what`.
    fn note(&mut self, what: &str, errors: Vec<String>) {
        if !errors.is_empty() {
            self.0.push(format!("{what}:\n{}", errors.join("\n")));
        }
    }
}

/// POSTs a Response request to the door; its JSON answer, noted as a Response (when 200).
fn create(door: &Door, found: &mut Findings, what: &str, body: Value) -> Value {
    let (status, answer) = crate::common::post(&door.url(""), &body, &[]);
    assert_eq!(status, 200, "{what}: {answer}");
    found.note(what, response_violations(&answer));
    answer
}

/// POSTs a streamed request; its events, each noted (and their sequence numbers rising).
fn stream(door: &Door, found: &mut Findings, what: &str, mut body: Value) -> Vec<Value> {
    body["stream"] = json!(true);
    let (status, headers, text) = crate::common::http("POST", &door.url(""), &[], Some(&body));
    assert_eq!(status, 200, "{text}");
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("text/event-stream")),
        "{headers:?}"
    );
    let events = sse_events(&text);
    let mut last = -1;
    for (name, ev) in &events {
        assert_eq!(ev["type"], name.as_str(), "the SSE event name is the type");
        found.note(&format!("{what}: {name}"), event_violations(ev));
        let n = ev["sequence_number"].as_i64().expect("sequence_number");
        assert!(n > last, "sequence numbers rise: {events:?}");
        last = n;
    }
    events.into_iter().map(|(_, ev)| ev).collect()
}

/// The `type` of every output item.
fn types(response: &Value) -> Vec<&str> {
    let items = response["output"].as_array().into_iter().flatten();
    items.filter_map(|i| i["type"].as_str()).collect()
}

#[test]
fn kiln_serves_responses_that_validate_against_openais_schemas() {
    let door = Door::start();
    let mut found = Findings::default();
    let f = &mut found;
    let plain = create(
        &door,
        f,
        "plain",
        json!({"model": "greeter", "input": "Say hello."}),
    );
    assert_eq!(plain["output"][0]["content"][0]["text"], HELLO);
    let shop = create(
        &door,
        f,
        "mcp_call",
        json!({"model": "shop", "input": "Price of SKU-1?"}),
    );
    assert_eq!(types(&shop), ["mcp_call", "message"], "{shop}");
    let tools = json!([discount_tool()]);
    let ask =
        json!({"model": "clerk", "input": "Price of SKU-1 after its discount?", "tools": tools});
    let call = create(&door, f, "function_call", ask.clone());
    assert_eq!(types(&call), ["function_call"], "{call}");
    let answer = json!({"model": "clerk", "previous_response_id": call["id"], "tools": tools,
        "input": [{"type": "function_call_output", "call_id": call["output"][0]["call_id"], "output": "10% off"}]});
    let then = create(&door, f, "after function_call_output", answer);
    assert_eq!(then["output"][0]["content"][0]["text"], CLERK_ANSWER);
    for r in [&plain, &shop, &call, &then] {
        let id = r["id"].as_str().expect("id");
        let (status, stored) = crate::common::get(&door.url(&format!("/{id}")));
        assert_eq!(status, 200, "{stored}");
        f.note(&format!("GET {id}"), response_violations(&stored));
        assert_eq!(stored["output"], r["output"]);
        let (status, items) = crate::common::get(&door.url(&format!("/{id}/input_items")));
        assert_eq!(status, 200, "{items}");
        f.note(
            &format!("GET {id}/input_items"),
            item_list_violations(&items),
        );
        assert!(
            !items["data"].as_array().expect("data").is_empty(),
            "{items}"
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    let shop_ask = json!({"model": "shop", "input": "Price of SKU-1?"});
    for (what, body) in [("stream mcp_call", shop_ask), ("stream function_call", ask)] {
        let events = stream(&door, f, what, body);
        seen.extend(
            events
                .iter()
                .filter_map(|e| e["type"].as_str().map(String::from)),
        );
        assert_eq!(events[0]["type"], "response.created");
        assert_eq!(events.last().expect("events")["type"], "response.completed");
    }
    for ty in [
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(seen.contains(ty), "{ty}: {seen:?}");
    }
    let (status, error) =
        crate::common::post(&door.url(""), &json!({"model": "nope", "input": "hi"}), &[]);
    assert_eq!(status, 404, "{error}");
    f.note("unknown model", violations("ErrorResponse", &error));
    assert_eq!(error["error"]["code"], "model_not_found");
    assert!(
        found.0.is_empty(),
        "kiln's answers break OpenAI's schemas:\n\n{}",
        found.0.join("\n\n")
    );
}
