//! Property tests: arbitrary input to the DSL loader, the schema compiler and the provider reply
//! parsers never panics; it yields a value or a clear error. Generated params agree with their
//! schema: values meeting the constraints validate, values breaking one are rejected at their
//! path, and every export format carries the schema.

use kiln_providers::{TextSink, anthropic, ollama, openai::chat};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::sync::{Arc, OnceLock};

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "[a-z_\\-{}\\[\\]\":,\\\\ ]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "text",
            "tool_use",
            "message_stop",
            "object",
            "string",
            "[DONE]",
            "max_tokens",
            "length",
            "tool_calls"
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "type",
                        "content",
                        "choices",
                        "message",
                        "delta",
                        "tool_calls",
                        "function",
                        "arguments",
                        "name",
                        "id",
                        "input",
                        "index",
                        "text",
                        "partial_json",
                        "done",
                        "error",
                        "usage",
                        "stop_reason",
                        "finish_reason",
                        "items",
                        "properties",
                        "enum",
                        "min",
                        "max",
                        "pattern",
                        "optional",
                        "default",
                        "nullable",
                        "desc"
                    ]),
                    inner
                ),
                0..6
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect::<Map<String, Value>>()
            )),
        ]
    })
}

/// One param with constraints, for generating values that meet or break them.
#[derive(Debug, Clone)]
enum Spec {
    /// A string of `min..=min+extra` characters.
    Str { min: u64, extra: u64 },
    /// An integer in `lo..=lo+span`.
    Int { lo: i64, span: i64 },
    /// One of these strings (distinct, none containing `!`).
    Enum(Vec<String>),
    /// An array of `min..=min+extra` integers.
    Arr { min: u64, extra: u64 },
    /// An object `{inner: integer >= 0}`.
    Obj,
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        (0u64..5, 0u64..5).prop_map(|(min, extra)| Spec::Str { min, extra }),
        (-1000i64..1000, 0i64..50).prop_map(|(lo, span)| Spec::Int { lo, span }),
        prop::collection::btree_set("[a-z]{1,6}", 1..5)
            .prop_map(|s| Spec::Enum(s.into_iter().collect())),
        (0u64..4, 0u64..4).prop_map(|(min, extra)| Spec::Arr { min, extra }),
        Just(Spec::Obj),
    ]
}

impl Spec {
    /// The DSL type and option map.
    fn options(&self) -> (&'static str, Value) {
        match self {
            Spec::Str { min, extra } => (
                "string",
                json!({"min_length": min, "max_length": min + extra}),
            ),
            Spec::Int { lo, span } => ("integer", json!({"min": lo, "max": lo + span})),
            Spec::Enum(values) => ("string", json!({"enum": values})),
            Spec::Arr { min, extra } => (
                "array",
                json!({"items": "integer", "min_items": min, "max_items": min + extra}),
            ),
            Spec::Obj => (
                "object",
                json!({"properties": {"inner": {"type": "integer", "min": 0}}}),
            ),
        }
    }

    /// A value meeting every constraint; `pick` chooses among them.
    fn valid(&self, pick: u64) -> Value {
        match self {
            Spec::Str { min, extra } => json!("a".repeat((min + pick % (extra + 1)) as usize)),
            Spec::Int { lo, span } => json!(lo + (pick % (*span as u64 + 1)) as i64),
            Spec::Enum(values) => json!(values[(pick % values.len() as u64) as usize]),
            Spec::Arr { min, extra } => {
                json!(vec![7; (min + pick % (extra + 1)) as usize])
            }
            Spec::Obj => json!({"inner": pick % 100}),
        }
    }

    /// Arguments whose `x` breaks exactly one constraint, with the path the violation must
    /// name.
    fn broken(&self, pick: u64) -> Vec<(Value, String)> {
        let at = |v: Value| (json!({"x": v}), "/x".to_string());
        let mut out = Vec::new();
        match self {
            Spec::Str { min, extra } => {
                out.push(at(json!("a".repeat((min + extra + 1) as usize))));
                out.push(at(json!(42)));
                if *min > 0 {
                    out.push(at(json!("a".repeat((min - 1) as usize))));
                }
            }
            Spec::Int { lo, span } => {
                out.push(at(json!(lo + span + 1)));
                out.push(at(json!(lo - 1)));
                out.push(at(json!(lo.to_string())));
                out.push(at(json!(*lo as f64 + 0.5)));
            }
            Spec::Enum(values) => {
                let v = &values[(pick % values.len() as u64) as usize];
                out.push(at(json!(format!("{v}!"))));
            }
            Spec::Arr { min, extra } => {
                out.push(at(json!(vec![7; (min + extra + 1) as usize])));
                if *min > 0 {
                    out.push(at(json!(vec![7; (min - 1) as usize])));
                    let mut items = vec![json!(7); *min as usize];
                    let i = (pick % min) as usize;
                    items[i] = json!("seven");
                    out.push((json!({"x": items}), format!("/x/{i}")));
                }
            }
            Spec::Obj => {
                out.push((json!({"x": {"inner": -1}}), "/x/inner".into()));
                out.push((json!({"x": {"inner": "1"}}), "/x/inner".into()));
                out.push(at(json!({})));
                out.push(at(json!({"inner": 1, "other": 2})));
            }
        }
        out
    }
}

/// Keywords OpenAI strict mode rejects (kiln drops them with a warning).
const STRICT_UNSUPPORTED: &[&str] = &[
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "default",
    "format",
    "minimum",
    "maximum",
    "pattern",
];

/// Every export format carries the schema: unchanged where the format takes JSON Schema as
/// is, and in strict form (all properties required, no extra ones, no unsupported keywords,
/// each drop warned about) for openai-strict.
fn assert_exports_keep(schema: &Value) -> Result<(), TestCaseError> {
    use kiln_core::schema::{Format, export};
    for (format, path) in [
        (Format::Intermediate, "/parameters"),
        (Format::Anthropic, "/input_schema"),
        (Format::OpenAi, "/function/parameters"),
        (Format::Ollama, "/function/parameters"),
    ] {
        let (def, warnings) = export("t", "d", schema, format);
        prop_assert_eq!(def.pointer(path), Some(schema), "{:?}", format);
        prop_assert!(warnings.is_empty());
        let name = def
            .pointer("/name")
            .or_else(|| def.pointer("/function/name"));
        prop_assert_eq!(name, Some(&json!("t")));
    }
    let (def, warnings) = export("t", "d", schema, Format::OpenAiStrict);
    prop_assert_eq!(&def["function"]["strict"], &json!(true));
    let strict = &def["function"]["parameters"];
    let mut dropped = 0;
    count_unsupported(schema, &mut dropped);
    prop_assert_eq!(warnings.len(), dropped, "{:?}", warnings);
    check_strict(strict)?;
    Ok(())
}

/// Unsupported keywords wherever a schema sits (the node itself, its items and properties).
fn count_unsupported(schema: &Value, n: &mut usize) {
    let Some(m) = schema.as_object() else { return };
    *n += m
        .keys()
        .filter(|k| STRICT_UNSUPPORTED.contains(&k.as_str()))
        .count();
    if let Some(items) = m.get("items") {
        count_unsupported(items, n);
    }
    for p in m
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        count_unsupported(p.1, n);
    }
}

fn check_strict(schema: &Value) -> Result<(), TestCaseError> {
    let Some(m) = schema.as_object() else {
        return Ok(());
    };
    for k in m.keys() {
        prop_assert!(
            !STRICT_UNSUPPORTED.contains(&k.as_str()),
            "{} left in {}",
            k,
            schema
        );
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut required: Vec<&str> = m["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        names.sort();
        required.sort();
        prop_assert_eq!(names, required, "strict: every property is required");
        prop_assert_eq!(&m["additionalProperties"], &json!(false));
        for p in props.values() {
            check_strict(p)?;
        }
    }
    if let Some(items) = m.get("items") {
        check_strict(items)?;
    }
    Ok(())
}

fn sink() -> TextSink {
    Arc::new(|_: &str| {})
}

fn engine() -> &'static Arc<rhai::Engine> {
    static E: OnceLock<Arc<rhai::Engine>> = OnceLock::new();
    E.get_or_init(|| Arc::new(crate::engine(&Default::default(), vec![], None)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn the_loader_never_panics_on_arbitrary_source(src in "[ -~\\n]{0,200}") {
        let f = crate::loader::load_source(engine(), "p.rhai", &src);
        for e in f.errors {
            prop_assert!(e.to_string().starts_with("p.rhai:"));
        }
    }

    #[test]
    fn the_loader_never_panics_on_arbitrary_dsl(name in "[a-zA-Z0-9_ !-]{0,70}", ty in "[a-z]{0,8}", opts in json_value()) {
        let opts = serde_json::to_string(&opts).unwrap_or_default();
        let src = format!("tool({name:?}).param(\"x\", {ty:?}, json_decode({opts:?})).handler(|a| 1);");
        let f = crate::loader::load_source(engine(), "p.rhai", &src);
        prop_assert!(f.tools.len() + f.errors.len() >= 1);
    }

    #[test]
    fn the_loader_accepts_exactly_the_params_that_compile_and_exports_keep_the_schema(ty in "[a-z]{0,8}", opts in json_value()) {
        let map = opts.as_object().cloned().unwrap_or_default();
        if let Ok((schema, _)) = kiln_core::schema::build_param("x", &ty, &map) {
            let obj = kiln_core::schema::object_schema(&[kiln_core::schema::Param { name: "x".into(), schema, required: true }]);
            let compiles = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .should_validate_formats(true)
                .build(&obj)
                .is_ok();
            // The script is given the options the schema was built from: a value that is not a
            // map (null, a number...) is read by the loader otherwise, so it is not this property.
            let opts_text = serde_json::to_string(&Value::Object(map.clone())).unwrap_or_default();
            let src = format!("tool(\"t\").param(\"x\", {ty:?}, json_decode({opts_text:?})).handler(|a| 1);");
            let f = crate::loader::load_source(engine(), "p.rhai", &src);
            prop_assert_eq!(f.tools.len() == 1, compiles, "loader errors: {:?}", f.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>());
            if !compiles {
                prop_assert!(f.errors.iter().any(|e| e.to_string().contains("invalid JSON Schema")));
            }
            assert_exports_keep(&obj)?;
        }
    }

    #[test]
    fn generated_values_validate_and_each_broken_constraint_is_rejected_at_its_path(spec in spec(), pick in any::<u64>(), nullable in any::<bool>()) {
        let (ty, mut opts) = spec.options();
        if nullable {
            opts["nullable"] = Value::Bool(true);
        }
        let src = format!(
            "tool(\"t\").param(\"x\", {ty:?}, json_decode({:?})).handler(|a| 1);",
            opts.to_string()
        );
        let f = crate::loader::load_source(engine(), "p.rhai", &src);
        prop_assert!(f.errors.is_empty(), "{:?}", f.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>());
        let tool = &f.tools[0];
        let valid = spec.valid(pick);
        prop_assert_eq!(tool.violations(&json!({"x": valid})), Vec::<String>::new(), "valid: {}", valid);
        let mut broken = spec.broken(pick);
        broken.push((json!({}), "/".into()));
        broken.push((json!({"x": valid, "y": 1}), "/".into()));
        if nullable {
            let null_ok = tool.violations(&json!({"x": null})).is_empty();
            prop_assert!(null_ok, "null is valid when nullable");
        } else {
            broken.push((json!({"x": null}), "/x".into()));
        }
        for (args, path) in broken {
            let found = tool.violations(&args);
            prop_assert!(!found.is_empty(), "{} was accepted by {}", args, tool.schema);
            for v in &found {
                prop_assert!(v.starts_with(&format!("{path}: ")), "{} for {}: expected path {}", v, args, path);
            }
        }
        assert_exports_keep(&tool.schema)?;
    }

    #[test]
    fn reply_parsers_never_panic_on_arbitrary_json(v in json_value()) {
        let _ = anthropic::parse_response(&v);
        let _ = chat::parse_response(&v);
        let mut state = ollama::ChatState::default();
        let _ = state.apply(&v.to_string(), &sink());
        let _ = state.finish();
    }

    #[test]
    fn stream_parsers_never_panic_on_arbitrary_events(events in prop::collection::vec(json_value(), 0..8), junk in "[ -~\\n]{0,80}") {
        let mut text = String::new();
        for e in &events {
            text.push_str(&format!("event: x\ndata: {e}\n\n"));
        }
        text.push_str(&junk);
        let _ = anthropic::parse_sse(&text, &sink());
        let _ = chat::parse_sse(&text, &sink());
        let mut state = ollama::ChatState::default();
        for line in text.lines() {
            if state.apply(line, &sink()).is_err() {
                break;
            }
        }
    }
}
