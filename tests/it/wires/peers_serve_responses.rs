//! Official clients drive `kiln serve`'s `POST /v1/responses`: the OpenAI Python SDK
//! (`responses.create`, `.stream`, `.retrieve`, `.input_items.list`, `.delete`, `.cancel`) and
//! the OpenAI Agents SDK (`Runner.run` and `Runner.run_streamed` with the SDK's own Responses
//! model, one kiln tool and one `@function_tool` in the same run). Ignored by default (they need
//! `pip install openai openai-agents`, pinned in .ci/run, which runs them with
//! `cargo test --test it peers -- --ignored`).

use crate::common::*;
use crate::wires::responses_support::*;
use serde_json::{Value, json};
use std::process::Command;

/// Fails with a clear message when a Python package is missing.
fn require_python(module: &str, pin: &str) {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "the Python package {pin} is missing: pip install {pin}");
}

/// Runs a peer script against the door; its JSON.
fn run_script(script: &str, args: &[&str]) -> Value {
    let started = std::time::Instant::now();
    let out = Command::new("python3")
        .arg(repo().join("tests/peers").join(script))
        .args(args)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{script} failed:\n{}", stderr(&out));
    eprintln!("{script}: {:.1} s", started.elapsed().as_secs_f64());
    serde_json::from_str(stdout(&out).trim()).expect("json from the script")
}

/// The `content` of every tool message a model received, in order.
fn tool_results(requests: &[Value]) -> Vec<Vec<String>> {
    let messages = requests.iter().map(|r| {
        let messages = r["body"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string())
            .collect()
    });
    messages.collect()
}

/// Asserts the SDK raised its NotFoundError for a 404.
fn assert_not_found(error: &Value) {
    assert_eq!(
        (&error[0], &error[1]),
        (&json!("NotFoundError"), &json!(404)),
        "{error}"
    );
}

#[test]
#[ignore = "needs the OpenAI Python SDK: pip install openai==3.57.0 (run by .ci/run)"]
fn peers_the_openai_sdk_drives_kiln_serves_responses_api() {
    require_python("openai", "openai==3.57.0");
    let door = Door::start();
    let v = run_script("serve_responses_sdk.py", &[&door.serve.url]);
    created(&v);
    let clerk = door.model_requests("clerk");
    assert!(
        tool_results(&clerk).contains(&vec!["10% off".to_string()]),
        "the client's output reached the model: {clerk:#?}"
    );
    streamed(&v);
    stored(&v);
    cancelled(&v["cancel"]);
    assert_eq!(
        v["unknown_model"],
        json!(["NotFoundError", 404, "model_not_found"])
    );
    assert_not_found(&v["unknown_id"]);
    // The input as the SDK reads it back: a user message of input_text parts.
    assert_eq!(v["input_items"], json!([["user", "Price of SKU-1?"]]));
    compacted(&v["compact"], &door.model_requests("greeter"));
}

/// What `responses.compact` answered, and what the next request sent the model.
fn compacted(v: &Value, requests: &[Value]) {
    assert_eq!(v["object"], "response.compaction", "{v}");
    let types = v["types"].as_array().cloned().unwrap_or_default();
    assert_eq!((types.len(), &types[0]), (9, &json!("compaction")), "{v}");
    assert_eq!(v["usage"], json!([7, 4]));
    assert_eq!(v["then"], HELLO, "{v}");
    let last = requests.last().map(|r| r["body"]["messages"].to_string());
    assert!(
        last.as_ref().is_some_and(
            |m| m.contains("Summary of the earlier conversation") && !m.contains("Question 0")
        ),
        "the model read the summary, not the older turns: {last:?}"
    );
}

/// What `responses.create` answered: a plain answer, a kiln tool's call, a function's round trip.
fn created(v: &Value) {
    let plain = &v["plain"];
    assert_eq!(plain["text"], HELLO, "{v:#}");
    assert_eq!(
        (&plain["object"], &plain["status"], &plain["model"]),
        (&json!("response"), &json!("completed"), &json!("greeter"))
    );
    assert!(plain["id"].as_str().is_some_and(|i| i.starts_with("resp_")));
    assert_eq!(plain["types"], json!(["message"]));
    assert_eq!(plain["usage"], json!([7, 4, 11]));
    // The kiln tool ran inside kiln: its call and real result are an mcp_call item.
    let price = json!({"sku": "SKU-1", "price": 4.5});
    assert_eq!(v["kiln_tool"]["types"], json!(["mcp_call", "message"]));
    assert_eq!(
        v["kiln_tool"]["calls"],
        json!([["kiln", "lookup", {"sku": "SKU-1"}, price, null, "completed"]])
    );
    assert_eq!(v["kiln_tool"]["text"], SHOP_ANSWER);
    // The client's function: the run stopped at its call, the output went back by id.
    let f = &v["function"];
    assert_eq!(f["status"], "completed");
    assert_eq!(f["types"], json!(["function_call"]));
    assert_eq!(
        f["calls"],
        json!([["discount", {"sku": "SKU-1"}, true, true]])
    );
    assert_eq!(
        (&f["text"], &f["previous"]),
        (&json!(CLERK_ANSWER), &json!(true))
    );
    assert_eq!(f["then_types"], json!(["message"]));
}

/// What `responses.stream` saw: text deltas, the final response, a function's arguments.
fn streamed(v: &Value) {
    let price = json!({"sku": "SKU-1", "price": 4.5});
    let s = &v["stream"];
    assert_eq!(
        (&s["text"], &s["final_text"]),
        (&json!(SHOP_ANSWER), &json!(SHOP_ANSWER))
    );
    assert_eq!(s["final_types"], json!(["mcp_call", "message"]));
    assert_eq!(s["mcp_output"], json!([price]));
    assert_eq!(s["sequence_numbers_rise"], true, "{s}");
    let events: Vec<&str> = s["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        events[..2],
        ["response.created", "response.in_progress"],
        "{events:?}"
    );
    assert_eq!(events.last(), Some(&"response.completed"));
    for ev in [
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
    ] {
        assert!(events.contains(&ev), "{ev}: {events:?}");
    }
    let sf = &v["stream_function"];
    assert_eq!(sf["args"], json!({"sku": "SKU-1"}), "{sf}");
    assert_eq!(sf["calls"], json!([["discount", {"sku": "SKU-1"}]]));
}

/// What `retrieve`, `input_items.list` and `delete` saw; `store: false` kept nothing.
fn stored(v: &Value) {
    assert_eq!(
        v["retrieve"],
        json!({"same_id": true, "text": SHOP_ANSWER, "types": ["mcp_call", "message"]})
    );
    assert!(
        v["then_input_items"]
            .as_array()
            .is_some_and(|i| i.contains(&json!(["function_call_output", "10% off"]))),
        "{v:#}"
    );
    assert_eq!(v["deleted"][0], true);
    assert_not_found(&v["deleted"][1]);
    assert_eq!(v["unstored"][0], HELLO);
    assert_not_found(&v["unstored"][1]);
}

/// What `cancel` did to a response still waiting for its model.
fn cancelled(cancel: &Value) {
    assert_eq!(
        (&cancel["status"], &cancel["retrieved"]),
        (&json!("cancelled"), &json!("cancelled")),
        "{cancel}"
    );
    // The stream ends at once with the run: no event of the Responses stream says `cancelled`,
    // so the last is `response.failed` carrying the cancelled response.
    assert_eq!(cancel["ended"], "cancelled", "{cancel}");
    let after = cancel["after"].as_array().expect("after");
    assert_eq!(after.last(), Some(&json!("response.failed")), "{cancel}");
    assert!(
        !after.contains(&json!("response.output_text.delta")),
        "{cancel}"
    );
    assert!(
        cancel["seconds"].as_f64().is_some_and(|s| s < 3.5),
        "the slow run was not cut short: {cancel}"
    );
}

#[test]
#[ignore = "needs the OpenAI Agents SDK: pip install openai-agents==0.24.0 (run by .ci/run)"]
fn peers_the_openai_agents_sdk_runs_a_kiln_agent_with_its_own_function_tool() {
    require_python("agents", "openai-agents==0.24.0");
    let door = Door::start();
    let v = run_script("serve_agents_sdk.py", &[&door.serve.url, "mixed"]);
    for run in ["run", "streamed"] {
        let r = &v[run];
        assert_eq!(r["final"], MIXED_ANSWER, "{run}: {v:#}");
        // The SDK's function ran in Python once, for the SKU kiln's model asked about ...
        assert_eq!(r["asked"], json!(["SKU-1"]), "{run}");
        assert_eq!(r["tool_outputs"], json!(["10% off SKU-1"]), "{run}");
        // ... after kiln's own tool ran inside kiln, in the same model turn's output.
        assert_eq!(
            r["kiln_calls"],
            json!([["lookup", {"sku": "SKU-1", "price": 4.5}]]),
            "{run}"
        );
        assert_eq!(
            r["raw_outputs"],
            json!([["mcp_call", "function_call"], ["message"]]),
            "{run}"
        );
    }
    assert_eq!(v["streamed"]["deltas"], MIXED_ANSWER);
    // Kiln's model saw both tools' results before it answered, in each of the two runs.
    let results = tool_results(&door.model_requests("mixed"));
    let both: Vec<&Vec<String>> = results.iter().filter(|r| r.len() == 2).collect();
    assert_eq!(both.len(), 2, "{results:?}");
    for r in both {
        let lookup: Value = serde_json::from_str(&r[0]).unwrap_or(Value::String(r[0].clone()));
        assert_eq!(lookup["price"], 4.5, "{r:?}");
        assert_eq!(r[1], "10% off SKU-1");
    }
}
