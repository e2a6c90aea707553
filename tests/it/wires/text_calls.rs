//! Tool calls a local model writes as text (`.text_tool_calls(...)`), served as plain text by
//! `kiln mock`: recovered, validated and run on an agent that opts in, left as the answer on
//! one that does not, and a malformed one read back by the model as an error.

use crate::common::*;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
tool("lookup").description("Find a product").param("sku", "string", #{ pattern: "^SKU-[0-9]+$" })
    .handler(|args| #{ name: "brick", price: 4.5 });
for p in ["openai", "ollama"] {
    agent(`on_${p}`).provider(p).model("local-model").tools(["lookup"]).text_tool_calls("auto");
    agent(`off_${p}`).provider(p).model("local-model").tools(["lookup"]);
}
agent("hermes_only").provider("openai").model("local-model").tools(["lookup"]).text_tool_calls("hermes");
agent("json_only").provider("openai").model("local-model").tools(["lookup"]).text_tool_calls("json");
"#;

/// The shapes local chat templates write, each asking for `lookup(SKU-1)`, with the text left
/// around the call where the shape allows it.
const FORMATS: [(&str, &str, &str); 12] = [
    (
        "hermes",
        "Let me check.\n<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-1\"}}\n</tool_call>",
        "Let me check.",
    ),
    (
        "mistral",
        "[TOOL_CALLS] [{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-1\"}}]",
        "",
    ),
    (
        "llama",
        "<|python_tag|>{\"name\": \"lookup\", \"parameters\": {\"sku\": \"SKU-1\"}}",
        "",
    ),
    // Issue 61: Qwen2.5-Coder behind llama.cpp's server, the call in a ```json fence.
    (
        "qwen2.5-coder fence",
        "I'll look it up.\n```json\n{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-1\"}}\n```",
        "I'll look it up.",
    ),
    // Issue 61 too: one call per line.
    (
        "json lines",
        "{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-1\"}}\n{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-2\"}}",
        "",
    ),
    (
        "qwen3-coder",
        "<tool_call>\n<function=lookup>\n<parameter=sku>\nSKU-1\n</parameter>\n</function>\n</tool_call>",
        "",
    ),
    (
        "deepseek v3",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>lookup\n```json\n{\"sku\": \"SKU-1\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "",
    ),
    (
        "deepseek v3.1",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>lookup<｜tool▁sep｜>{\"sku\": \"SKU-1\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "",
    ),
    ("gemma 3", "[lookup(sku=\"SKU-1\")]", ""),
    (
        "gemma tool_code",
        "```tool_code\nlookup(sku=\"SKU-1\")\n```",
        "",
    ),
    (
        "gemma 4",
        "<|tool_call>call:lookup{sku:<|\"|>SKU-1<|\"|>}<tool_call|>",
        "",
    ),
    (
        "functiongemma",
        "<start_function_call>call:lookup{sku:<escape>SKU-1<escape>}<end_function_call>",
        "",
    ),
];

fn run(s: &Scripts, mock: &Mock, agent: &str, extra: &[&str]) -> (Option<i32>, Value) {
    let base = if agent.ends_with("openai") || agent.ends_with("_only") {
        format!("{}/v1", mock.url)
    } else {
        mock.url.clone()
    };
    let mut args = vec![
        agent,
        "Price of SKU-1?",
        "--json",
        "--scripts",
        ".",
        "--no-stdlib",
    ];
    args.extend_from_slice(&["--base-url", &base]);
    args.extend_from_slice(extra);
    let out = ask(&args, s.path());
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no report: {}", stderr(&out)));
    (out.status.code(), report)
}

#[test]
fn each_text_format_becomes_a_validated_call_on_an_agent_that_opts_in() {
    let s = Scripts::new(&[("tc.rhai", SCRIPT)]);
    for provider in ["openai", "ollama"] {
        for (format, text, kept) in FORMATS {
            let mock = Mock::start(&json!({"turns": [{"text": text}, {"text": "A brick: 4.5"}]}));
            let (code, report) = run(&s, &mock, &format!("on_{provider}"), &[]);
            let case = format!("{provider}/{format}: {report}");
            assert_eq!(code, Some(0), "{case}");
            assert_eq!(report["answer"], "A brick: 4.5", "{case}");
            let call = &report["tool_calls"][0];
            assert_eq!(call["name"], "lookup", "{case}");
            assert_eq!(call["args"], json!({"sku": "SKU-1"}), "{case}");
            assert_eq!(call["is_error"], false, "{case}");
            let written = if format == "json lines" { 2 } else { 1 };
            assert_eq!(
                report["tool_calls"].as_array().map(Vec::len),
                Some(written),
                "{case}"
            );
            // The transcript holds the call as a call, the text around it as text.
            let assistant = &report["messages"][1];
            assert_eq!(assistant["content"], kept, "{case}");
            assert_eq!(assistant["tool_calls"][0]["name"], "lookup", "{case}");
            // The model got the tool's result back on its own wire.
            let second = mock.requests()[1]["body"].to_string();
            assert!(second.contains("brick"), "{case}: {second}");
        }
    }
}

#[test]
fn text_stays_the_answer_on_an_agent_that_does_not_opt_in() {
    let s = Scripts::new(&[("tc.rhai", SCRIPT)]);
    for (format, text, _) in FORMATS {
        let mock = Mock::start(&json!({"turns": [{"text": text}, {"text": "never"}]}));
        let (code, report) = run(&s, &mock, "off_openai", &[]);
        assert_eq!(code, Some(0), "{format}: {report}");
        assert_eq!(report["answer"], text, "{format}");
        assert_eq!(report["tool_calls"], json!([]), "{format}");
        assert_eq!(mock.requests().len(), 1, "{format}");
    }
    // One format named: the others stay text.
    for (agent, other) in [("hermes_only", FORMATS[1].1), ("json_only", FORMATS[6].1)] {
        let mock = Mock::start(&json!({"turns": [{"text": other}, {"text": "never"}]}));
        let (_, report) = run(&s, &mock, agent, &[]);
        assert_eq!(report["answer"], other, "{agent}");
    }
    let fenced = FORMATS[3].1;
    let mock = Mock::start(&json!({"turns": [{"text": fenced}, {"text": "done"}]}));
    let (_, report) = run(&s, &mock, "json_only", &[]);
    assert_eq!(report["answer"], "done", "{report}");
    // The flag turns it on for an agent that did not.
    let hermes = FORMATS[0].1;
    let mock = Mock::start(&json!({"turns": [{"text": hermes}, {"text": "done"}]}));
    let (_, report) = run(&s, &mock, "off_openai", &["--text-tool-calls", "hermes"]);
    assert_eq!(report["answer"], "done");
    assert_eq!(report["tool_calls"][0]["name"], "lookup");
}

#[test]
fn a_malformed_or_invalid_text_call_is_an_error_the_model_reads() {
    let s = Scripts::new(&[("tc.rhai", SCRIPT)]);
    // Bad JSON inside the tag: no tool runs, the model is told what was wrong.
    let bad = "<tool_call>{\"name\": \"lookup\", \"arguments\": {\"sku\": }</tool_call>";
    let mock = Mock::start(&json!({"turns": [{"text": bad}, {"text": "sorry"}]}));
    let (code, report) = run(&s, &mock, "on_openai", &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["answer"], "sorry");
    assert_eq!(report["tool_calls"], json!([]));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "asked again, not taken as the answer");
    let told = requests[1]["body"]["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(told["role"], "user", "{told}");
    let said = told["content"].as_str().unwrap_or_default();
    assert!(
        said.contains("could not be read: <tool_call> 1 is not valid JSON"),
        "{said}"
    );
    // A readable call with arguments the schema refuses, and an unknown tool: the usual
    // error results, read by the model.
    let invalid = "<tool_call>{\"name\": \"lookup\", \"arguments\": {\"sku\": \"brick\"}}</tool_call><tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>";
    let mock = Mock::start(&json!({"turns": [{"text": invalid}, {"text": "sorry"}]}));
    let (code, report) = run(&s, &mock, "on_openai", &[]);
    assert_eq!(code, Some(0), "{report}");
    let calls = report["tool_calls"].as_array().cloned().unwrap_or_default();
    assert_eq!(calls.len(), 2, "{report}");
    assert!(calls.iter().all(|c| c["is_error"] == true), "{report}");
    let second = mock.requests()[1]["body"].to_string();
    assert!(
        second.contains("pattern") || second.contains("SKU"),
        "{second}"
    );
    assert!(second.contains("nope"), "{second}");
    // With no markup around it: a broken JSON call in a fence is told to the model too, on
    // Ollama's wire; a Gemma 4 call the schema refuses gets the usual error result.
    let broken = "```json\n{\"name\": \"lookup\", \"arguments\": {\"sku\": }\n```";
    let mock = Mock::start(&json!({"turns": [{"text": broken}, {"text": "sorry"}]}));
    let (code, report) = run(&s, &mock, "on_ollama", &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["answer"], "sorry");
    assert_eq!(report["tool_calls"], json!([]));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "asked again, not taken as the answer");
    let said = requests[1]["body"]["messages"].to_string();
    assert!(said.contains("the JSON call is not valid"), "{said}");
    let refused = "<|tool_call>call:lookup{sku:<|\"|>brick<|\"|>}<tool_call|>";
    let mock = Mock::start(&json!({"turns": [{"text": refused}, {"text": "sorry"}]}));
    let (code, report) = run(&s, &mock, "on_ollama", &[]);
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["tool_calls"][0]["is_error"], true, "{report}");
    let second = mock.requests()[1]["body"].to_string();
    assert!(
        second.contains("pattern") || second.contains("SKU"),
        "{second}"
    );
}
