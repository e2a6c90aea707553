//! `kiln mock` turns filtered by model and by the first user message: one scenario serves an
//! eval of many cases over two models at once, each request getting its own answer.

use crate::common::*;
use serde_json::{Value, json};

fn eval_scenario() -> Value {
    json!({"by_round": true, "turns": [
        {"model": "weak", "user": "case 2", "text": "weak is wrong on 2"},
        {"user": "case 2", "tool_calls": [{"name": "lookup", "args": {"case": 2}}]},
        {"user": "case 2", "text": "right on 2"},
        {"user": "case 1", "text": "right on 1"},
        {"text": "default"}
    ]})
}

/// One request on `wire` for `model` asking `prompt`: the reply's text, or its first tool
/// call's name.
fn ask(url: &str, wire: &str, model: &str, prompt: &str) -> String {
    let (status, reply) = match wire {
        "openai" => post(
            &format!("{url}/v1/chat/completions"),
            &json!({"model": model, "messages": [
                {"role": "system", "content": "case 1 is not the user's"},
                {"role": "user", "content": prompt}
            ]}),
            &[("authorization", "Bearer k")],
        ),
        "anthropic" => post(
            &format!("{url}/v1/messages"),
            &json!({"model": model, "max_tokens": 100, "messages": [
                {"role": "user", "content": [{"type": "text", "text": prompt}]}
            ]}),
            &[("x-api-key", "k"), ("anthropic-version", "2023-06-01")],
        ),
        _ => post(
            &format!("{url}/v1beta/models/{model}:generateContent"),
            &json!({"contents": [{"role": "user", "parts": [{"text": prompt}]}]}),
            &[("x-goog-api-key", "k")],
        ),
    };
    assert_eq!(status, 200, "{wire} {model} {prompt}: {reply}");
    let text = match wire {
        "openai" => &reply["choices"][0]["message"]["content"],
        "anthropic" => &reply["content"][0]["text"],
        _ => &reply["candidates"][0]["content"]["parts"][0]["text"],
    };
    let call = match wire {
        "openai" => &reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "anthropic" => &reply["content"][0]["name"],
        _ => &reply["candidates"][0]["content"]["parts"][0]["functionCall"]["name"],
    };
    text.as_str()
        .or(call.as_str())
        .unwrap_or_else(|| panic!("{wire}: {reply}"))
        .to_string()
}

#[test]
fn each_model_and_case_gets_its_own_answer_concurrently_on_every_wire() {
    let mock = Mock::start(&eval_scenario());
    let expected = [
        ("weak", "case 1: add", "right on 1"),
        ("weak", "case 2: sum", "weak is wrong on 2"),
        ("weak", "case 3", "default"),
        ("good", "case 1: add", "right on 1"),
        ("good", "case 2: sum", "lookup"),
        ("good", "Case 2", "default"),
    ];
    let mut asks = Vec::new();
    for wire in ["openai", "anthropic", "gemini"] {
        for (model, prompt, answer) in expected {
            let url = mock.url.clone();
            asks.push(std::thread::spawn(move || {
                let got = ask(&url, wire, model, prompt);
                (wire, model, prompt, answer, got)
            }));
        }
    }
    for handle in asks {
        let (wire, model, prompt, answer, got) = handle.join().expect("thread");
        assert_eq!(got, answer, "{wire} {model} {prompt:?}");
    }
    // Every request is recorded, as the eval's tests need.
    assert_eq!(mock.requests().len(), 18);
}

#[test]
fn a_two_round_case_takes_its_two_fitting_turns_in_order() {
    let mock = Mock::start(&eval_scenario());
    let url = format!("{}/v1/chat/completions", mock.url);
    let call = json!({"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}});
    let round = |model: &str| {
        json!({"model": model, "messages": [
            {"role": "user", "content": "case 2"},
            {"role": "assistant", "content": null, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_0", "content": "4"}
        ]})
    };
    let (status, reply) = post(&url, &round("good"), &[("authorization", "Bearer k")]);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["choices"][0]["message"]["content"], "right on 2");
    // For `weak` the second turn that fits case 2 is the tool call.
    let (_, reply) = post(&url, &round("weak"), &[("authorization", "Bearer k")]);
    let name = &reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"];
    assert_eq!(name, "lookup", "{reply}");
}
