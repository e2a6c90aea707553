//! The DSL's param options as JSON Schema keywords, `returns`, and strict export.

use kiln_core::schema::*;
use serde_json::{Map, Value, json};

fn opts(v: Value) -> Map<String, Value> {
    v.as_object().cloned().expect("object")
}

#[test]
fn options_map_to_keywords() {
    let (s, req) = build_param(
        "sku",
        "string",
        &opts(json!({"desc": "SKU", "pattern": "^SKU-[0-9]+$", "min": 3, "nullable": true})),
    )
    .expect("valid");
    assert!(req);
    assert_eq!(
        s,
        json!({"type": ["string", "null"], "description": "SKU", "pattern": "^SKU-[0-9]+$", "minLength": 3})
    );
    let (_, req) = build_param("n", "integer", &opts(json!({"default": 5}))).expect("valid");
    assert!(!req);
}

#[test]
fn bad_options_are_errors() {
    let e = build_param("x", "string", &opts(json!({"colour": 1}))).expect_err("unknown key");
    assert!(e.contains("unknown option key `colour`"), "{e}");
    let e = build_param("x", "strin", &Map::new()).expect_err("bad type");
    assert!(e.contains("unknown param type \"strin\""), "{e}");
    let e = build_param("x", "string", &opts(json!({"pattern": "("}))).expect_err("regex");
    assert!(e.contains("not a valid regex"), "{e}");
}

#[test]
fn returns_takes_a_type_a_param_map_or_fields() {
    assert_eq!(
        returns_schema(&json!("integer")).expect("type"),
        json!({"type": "integer"})
    );
    assert_eq!(
        returns_schema(&json!({"type": "array", "items": "string"})).expect("param map"),
        json!({"type": "array", "items": {"type": "string"}})
    );
    let fields =
        returns_schema(&json!({"sum": "integer", "note": {"type": "string", "optional": true}}))
            .expect("fields");
    assert_eq!(fields["required"], json!(["sum"]));
    assert_eq!(fields["properties"]["note"], json!({"type": "string"}));
    let e = returns_schema(&json!({"sum": "integr"})).expect_err("bad type");
    assert!(e.contains("returns.sum") && e.contains("integr"), "{e}");
    let e = returns_schema(&json!(5)).expect_err("number");
    assert!(e.contains("type name or a map"), "{e}");
}

#[test]
fn strict_makes_everything_required_and_optional_nullable() {
    let params = vec![
        Param {
            name: "a".into(),
            schema: json!({"type": "string", "minLength": 1}),
            required: true,
        },
        Param {
            name: "b".into(),
            schema: json!({"type": "integer"}),
            required: false,
        },
    ];
    let (def, warnings) = export("t", "d", &object_schema(&params), Format::OpenAiStrict);
    let p = &def["function"]["parameters"];
    assert_eq!(p["required"], json!(["a", "b"]));
    assert_eq!(p["properties"]["b"]["type"], json!(["integer", "null"]));
    assert_eq!(p["additionalProperties"], json!(false));
    assert!(p["properties"]["a"].get("minLength").is_none());
    assert_eq!(warnings.len(), 1);
}
