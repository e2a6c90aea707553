//! Conformance with the official OpenAPI specs in ../shared/specs.

use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;

/// The shared specs folder (next to the project, or under KILN_SPECS).
pub fn specs_dir() -> PathBuf {
    std::env::var_os("KILN_SPECS")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::common::repo().join("tests/specs"))
}

/// Rewrites OpenAPI's legacy `nullable: true` into a 2020-12 `anyOf` with null (see SOURCES.md).
fn rewrite_nullable(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for child in m.values_mut() {
                rewrite_nullable(child);
            }
            if m.remove("nullable") == Some(json!(true)) {
                let inner = Value::Object(std::mem::take(m));
                m.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_nullable),
        _ => {}
    }
}

fn openai_doc() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| {
        let path = specs_dir().join("openai/openapi.yaml");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // The spec writes the i64 bounds of `seed` as decimal integers one past i64 range.
        let text = text.replace("9223372036854776000", "9.223372036854776e18");
        let mut doc: Value = serde_norway::from_str(&text).expect("openapi.yaml parses");
        rewrite_nullable(&mut doc);
        doc
    })
}

/// The OpenAI spec as JSON: parsed once per test process, `nullable` rewritten.
pub fn openai_spec() -> &'static Value {
    openai_doc()
}

/// A validator for `#/components/schemas/NAME` of the OpenAI spec.
pub fn openai_validator(name: &str) -> jsonschema::Validator {
    let mut root = openai_doc().clone();
    root["$ref"] = json!(format!("#/components/schemas/{name}"));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&root)
        .expect("schema builds")
}

/// Panics with every violation when `instance` does not match `name`.
pub fn assert_openai(name: &str, validator: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{name} violations:\n{}\ninstance: {instance}",
        errors.join("\n")
    );
}

#[test]
fn every_openai_tool_definition_validates_against_chat_completion_tool() {
    let out = crate::common::kiln(
        &[
            "tools",
            "--format",
            "openai",
            "--scripts",
            "examples/catalog",
            "--scripts",
            "examples/seeds",
        ],
        &crate::common::repo(),
    );
    let defs: Value = serde_json::from_str(&crate::common::stdout(&out)).expect("json");
    let v = openai_validator("ChatCompletionTool");
    let defs = defs.as_array().expect("array");
    assert!(defs.len() >= 8);
    for d in defs {
        assert_openai("ChatCompletionTool", &v, d);
    }
    assert!(
        !v.is_valid(&json!({"type": "function", "function": {"description": "no name"}})),
        "the validator rejects a bad definition"
    );
    let strict = crate::common::kiln(
        &["tools", "--format", "openai-strict"],
        &crate::common::repo(),
    );
    let defs: Value = serde_json::from_str(&crate::common::stdout(&strict)).expect("json");
    for d in defs.as_array().expect("array") {
        assert_openai("ChatCompletionTool", &v, d);
    }
}
