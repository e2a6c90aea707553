use super::super::call::TextCall;
use super::{Found, Offered, recover};
use kiln_core::model::CallArgs;
use kiln_registry::agent_spec::TextCallFormat;
use serde_json::{Value, json};
use std::sync::LazyLock;

/// The schemas of the tools the tests offer: `lookup(sku: string)`, `calculator(expr)`.
static SCHEMAS: LazyLock<[Value; 2]> = LazyLock::new(|| {
    [
        json!({"type": "object", "properties": {"sku": {"type": "string"}}}),
        json!({"type": "object", "properties": {"expr": {"type": "string"}}}),
    ]
});

/// `recover` with `lookup` and `calculator` offered.
pub(super) fn recover_in(text: &str, format: TextCallFormat) -> Found {
    let tools = [
        Offered {
            name: "lookup",
            schema: &SCHEMAS[0],
        },
        Offered {
            name: "calculator",
            schema: &SCHEMAS[1],
        },
    ];
    recover(text, format, &tools)
}

pub(super) fn call(name: &str, args: serde_json::Value) -> TextCall {
    TextCall {
        name: name.into(),
        args: CallArgs::parsed(args),
    }
}

pub(super) fn calls(text: &str, format: TextCallFormat) -> (String, Vec<TextCall>) {
    match recover_in(text, format) {
        Found::Calls { text, calls } => (text, calls),
        other => panic!("expected calls in {text:?}, got {other:?}"),
    }
}

pub(super) fn problem(text: &str) -> String {
    match recover_in(text, TextCallFormat::Auto) {
        Found::Malformed(p) => p,
        other => panic!("expected a malformed call in {text:?}, got {other:?}"),
    }
}

#[test]
fn hermes_blocks_become_calls_and_the_text_around_them_stays() {
    let text = "Let me look.\n<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-1\"}}\n</tool_call>\n<tool_call>{\"name\": \"calculator\", \"arguments\": \"{\\\"expr\\\": \\\"1+1\\\"}\"}</tool_call>";
    let (rest, got) = calls(text, TextCallFormat::Auto);
    assert_eq!(rest, "Let me look.");
    assert_eq!(
        got,
        vec![
            call("lookup", json!({"sku": "SKU-1"})),
            call("calculator", json!({"expr": "1+1"}))
        ]
    );
    assert_eq!(calls(text, TextCallFormat::Hermes).1.len(), 2);
    assert_eq!(
        recover_in(text, TextCallFormat::Mistral),
        Found::Nothing,
        "only the formats asked for"
    );
}

#[test]
fn a_hermes_block_cut_before_its_closing_tag_still_counts() {
    let (_, got) = calls(
        "<tool_call>{\"name\": \"lookup\", \"arguments\": {}}",
        TextCallFormat::Hermes,
    );
    assert_eq!(got, vec![call("lookup", json!({}))]);
}

#[test]
fn mistral_lists_and_v11_calls_become_calls() {
    let (rest, got) = calls(
        "[TOOL_CALLS] [{\"name\": \"lookup\", \"arguments\": {\"sku\": \"SKU-2\"}}, {\"name\": \"calculator\", \"arguments\": {\"expr\": \"2\"}}]",
        TextCallFormat::Auto,
    );
    assert_eq!(rest, "");
    assert_eq!(got[0], call("lookup", json!({"sku": "SKU-2"})));
    assert_eq!(got[1].name, "calculator");
    let (_, got) = calls(
        "Sure.[TOOL_CALLS]lookup[ARGS]{\"sku\": \"SKU-3\"}[TOOL_CALLS]calculator[ARGS]{}",
        TextCallFormat::Mistral,
    );
    assert_eq!(
        got,
        vec![
            call("lookup", json!({"sku": "SKU-3"})),
            call("calculator", json!({}))
        ]
    );
}

#[test]
fn llama_python_tag_and_bare_json_become_calls() {
    let (rest, got) = calls(
        "<|python_tag|>{\"name\": \"lookup\", \"parameters\": {\"sku\": \"SKU-4\"}}; {\"name\": \"calculator\", \"parameters\": {}}<|eom_id|>",
        TextCallFormat::Auto,
    );
    assert_eq!(rest, "");
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], call("lookup", json!({"sku": "SKU-4"})));
    let (rest, got) = calls(
        " {\"type\": \"function\", \"name\": \"lookup\", \"parameters\": {\"sku\": \"SKU-5\"}} ",
        TextCallFormat::Llama,
    );
    assert_eq!(rest, "");
    assert_eq!(got, vec![call("lookup", json!({"sku": "SKU-5"}))]);
}

#[test]
fn plain_text_and_json_answers_stay_text() {
    for text in [
        "The price is 13.5.",
        "{\"name\": \"brick\", \"price\": 4.5}",
        "{\"name\": \"not_a_tool\", \"parameters\": {}}",
        "Here is JSON: {\"name\": \"lookup\", \"parameters\": {}}",
        "",
    ] {
        assert_eq!(
            recover_in(text, TextCallFormat::Auto),
            Found::Nothing,
            "{text}"
        );
    }
    let tagged = "<tool_call>{\"name\": \"lookup\", \"arguments\": {}}</tool_call>";
    assert_eq!(recover_in(tagged, TextCallFormat::Off), Found::Nothing);
}

#[test]
fn malformed_tagged_calls_are_reported_not_answered() {
    let p = problem("<tool_call>{\"name\": \"lookup\", \"arguments\": {\"sku\": }</tool_call>");
    assert!(p.contains("<tool_call> 1 is not valid JSON"), "{p}");
    assert!(p.contains("No tool ran"), "{p}");
    assert!(p.contains("<tool_call>{\"name\": \"TOOL\""), "{p}");
    let p = problem("<tool_call>{\"arguments\": {}}</tool_call>");
    assert!(p.contains("no \"name\""), "{p}");
    let p = problem("[TOOL_CALLS] [{\"name\": \"lookup\", \"arguments\": [1]}]");
    assert!(p.contains("must be a JSON object, not a list"), "{p}");
    let p = problem("[TOOL_CALLS] lookup {}");
    assert!(p.contains("neither JSON nor NAME[ARGS]"), "{p}");
    let p = problem("<|python_tag|>{\"name\": \"lookup\", ");
    assert!(
        p.contains("the JSON after <|python_tag|> is not valid"),
        "{p}"
    );
}

#[test]
fn arguments_that_are_not_json_stay_invalid_for_validation() {
    let (_, got) = calls(
        "<tool_call>{\"name\": \"lookup\", \"arguments\": \"sku=SKU-1\"}</tool_call>",
        TextCallFormat::Auto,
    );
    assert!(matches!(got[0].args, CallArgs::Invalid { .. }));
}

#[test]
fn settings_parse_by_name() {
    for f in TextCallFormat::ALL {
        assert_eq!(TextCallFormat::parse(f.name()), Some(f));
    }
    assert_eq!(TextCallFormat::parse("qwen3"), None);
    assert_eq!(
        TextCallFormat::names(),
        "off, auto, hermes, qwen, mistral, llama, deepseek, gemma, json"
    );
    assert!(TextCallFormat::Qwen.covers(TextCallFormat::Hermes));
    assert!(TextCallFormat::Qwen.covers(TextCallFormat::Json));
    assert!(!TextCallFormat::Qwen.covers(TextCallFormat::Gemma));
    assert!(!TextCallFormat::Off.covers(TextCallFormat::Off));
}
