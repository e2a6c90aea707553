//! The Responses door under Restate (issue 44): `POST /v1/responses` on a front door submits
//! a `KilnRun`; a response whose worker dies is finished by another without repeating its
//! completed steps, and `previous_response_id` continues it (the actor's own only).

use super::fixtures::{ALICE, BOB, Cluster};
use serde_json::{Value, json};

fn types(response: &Value) -> Vec<String> {
    response["output"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|i| i["type"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn durable_responses_survive_a_killed_worker_and_continue_by_previous_response_id() {
    let call = |s: &str| json!({"tool_calls": [{"name": "count", "args": {"step": s}}]});
    let scenario = json!({"require_auth": false, "by_round": true, "turns": [
        call("r1"), call("r2"), {"text": "counted twice"}, {"text": "second answer"},
        {"text": "streamed answer"},
    ]});
    let mut c = Cluster::start(&[("resp", scenario)]);
    // Through worker B's door; Restate runs it on A (the proxy's first choice): hold the
    // second tool step there and kill A.
    c.counter.hold("r2");
    let api = c.apis[1].clone();
    let post = std::thread::spawn(move || {
        let body = json!({"model": "resp", "input": "count"});
        let auth = format!("Bearer {ALICE}");
        super::fixtures::http(
            "POST",
            &format!("{api}/v1/responses"),
            &[("authorization", &auth)],
            Some(&body),
        )
    });
    c.counter.wait_until("the second tool step", |s| s.holding);
    c.kill(0);
    c.counter.release();
    let (status, first) = post.join().expect("the POST");
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["object"], "response", "{first}");
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["model"], "resp", "{first}");
    let id = first["id"].as_str().unwrap_or_default().to_string();
    assert!(id.starts_with("resp_inv_"), "{id}");
    assert_eq!(
        types(&first),
        ["mcp_call", "mcp_call", "message"],
        "{first}"
    );
    assert_eq!(first["output"][0]["output"], "counted r1 (#1)", "{first}");
    assert_eq!(first["output"][1]["server_label"], "kiln", "{first}");
    assert_eq!(first["output"][1]["status"], "completed", "{first}");
    assert_eq!(
        first["output"][2]["content"][0]["text"], "counted twice",
        "{first}"
    );
    assert!(
        first["usage"]["total_tokens"].as_u64().unwrap_or(0) > 0,
        "{first}"
    );
    // The completed step ran once; the one in flight again, under its one key.
    let counts = c.counter.counts("r");
    assert_eq!(counts["r1"].len(), 1, "{counts:?}");
    assert_eq!(counts["r2"].len(), 2, "{counts:?}");
    assert_eq!(counts["r2"][0], counts["r2"][1]);
    assert_eq!(
        c.mock("resp").requests().len(),
        3,
        "no model request repeated"
    );

    // Any worker answers for it from Restate; to its actor only.
    let path = format!("/v1/responses/{id}");
    let (status, got) = c.api(1, ALICE, "GET", &path, &[], None);
    assert_eq!(status, 200, "{got}");
    assert_eq!(
        (&got["output"], &got["status"]),
        (&first["output"], &first["status"])
    );
    assert_eq!(c.api(1, BOB, "GET", &path, &[], None).0, 404);
    let (status, listed) = c.api(1, ALICE, "GET", &format!("{path}/input_items"), &[], None);
    assert_eq!(status, 200, "{listed}");
    assert_eq!(listed["object"], "list", "{listed}");
    assert_eq!(listed["data"][0]["content"][0]["text"], "count", "{listed}");
    let (status, deleted) = c.api(1, ALICE, "DELETE", &path, &[], None);
    assert_eq!(status, 400, "{deleted}");
    assert!(deleted.to_string().contains("Restate"), "{deleted}");

    // The next response continues the conversation: the model sees the earlier messages.
    let next = json!({"model": "resp", "input": "again", "previous_response_id": id});
    let (status, body) = c.api(1, BOB, "POST", "/v1/responses", &[], Some(&next));
    assert_eq!(status, 404, "not Bob's response: {body}");
    assert_eq!(body["error"]["param"], "previous_response_id", "{body}");
    let (status, second) = c.api(1, ALICE, "POST", "/v1/responses", &[], Some(&next));
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["previous_response_id"], id.as_str(), "{second}");
    assert_eq!(types(&second), ["message"], "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "second answer");
    let requests = c.mock("resp").requests();
    assert_eq!(requests.len(), 4);
    let seen = requests[3].to_string();
    assert!(
        seen.contains("counted twice")
            && seen.contains("counted r1 (#1)")
            && seen.contains("again"),
        "{seen}"
    );

    // Streamed: created and in progress first, then the items and the end, numbered.
    let second_id = second["id"].as_str().unwrap_or_default();
    let streamed = json!({"model": "resp", "input": "more", "stream": true,
        "previous_response_id": second_id});
    let (status, events) = c.api(1, ALICE, "POST", "/v1/responses", &[], Some(&streamed));
    let events = events.as_str().unwrap_or_default().to_string();
    assert_eq!(status, 200, "{events}");
    let kinds: Vec<&str> = events
        .lines()
        .filter_map(|l| l.strip_prefix("event: "))
        .collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ],
        "{events}"
    );
    let numbers: Vec<u64> = events
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter_map(|d| d["sequence_number"].as_u64())
        .collect();
    assert_eq!(numbers, (0..9).collect::<Vec<u64>>(), "{events}");
    assert!(events.contains("streamed answer"), "{events}");
}

#[test]
#[ignore = "needs restate-server: run by .ci/run with KILN_RESTATE_SERVER set"]
fn durable_responses_hand_client_function_calls_back_and_continue_with_their_output() {
    let scenario = json!({"require_auth": false, "by_round": true, "turns": [
        {"tool_calls": [{"name": "lookup", "args": {"q": "kiln"}}]},
        {"text": "looked it up"},
    ]});
    let c = Cluster::start(&[("fn", scenario)]);
    let tools = json!([{"type": "function", "name": "lookup", "description": "Look a word up",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]);
    let body = json!({"model": "fn", "input": "what is kiln?", "tools": tools,
        "instructions": "Answer briefly."});
    let (status, first) = c.api(0, ALICE, "POST", "/v1/responses", &[], Some(&body));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(types(&first), ["function_call"], "{first}");
    let call = &first["output"][0];
    assert_eq!(call["name"], "lookup", "{first}");
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap_or("null"))
        .expect("arguments are JSON");
    assert_eq!(args, json!({"q": "kiln"}));
    assert_eq!(first["instructions"], "Answer briefly.", "{first}");
    assert_eq!(first["tools"][0]["name"], "lookup", "{first}");
    let requests = c.mock("fn").requests();
    let sent = requests[0].to_string();
    assert!(
        sent.contains("Answer briefly.") && sent.contains("Look a word up"),
        "the worker offered the client's tool and the instructions: {sent}"
    );

    // The client runs it and continues through the other worker.
    let output = json!({"model": "fn", "tools": tools, "previous_response_id": first["id"],
        "input": [{"type": "function_call_output", "call_id": call["call_id"],
                   "output": "a Rust host for agents"}]});
    let (status, second) = c.api(1, ALICE, "POST", "/v1/responses", &[], Some(&output));
    assert_eq!(status, 200, "{second}");
    assert_eq!(types(&second), ["message"], "{second}");
    assert_eq!(second["output"][0]["content"][0]["text"], "looked it up");
    let requests = c.mock("fn").requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[1].to_string().contains("a Rust host for agents"),
        "{}",
        requests[1]
    );
}
