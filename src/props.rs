//! Property tests: arbitrary input to the DSL loader, the schema compiler and the provider reply
//! parsers never panics; it yields a value or a clear error.

use crate::provider::{TextSink, anthropic, ollama, openai};
use proptest::prelude::*;
use serde_json::{Map, Value};
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

fn sink() -> TextSink {
    Arc::new(|_: &str| {})
}

fn engine() -> &'static Arc<rhai::Engine> {
    static E: OnceLock<Arc<rhai::Engine>> = OnceLock::new();
    E.get_or_init(|| Arc::new(crate::script::engine(&Default::default(), vec![], None)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn the_loader_never_panics_on_arbitrary_source(src in "[ -~\\n]{0,200}") {
        let f = crate::script::loader::load_source(engine(), "p.rhai", &src);
        for e in f.errors {
            prop_assert!(e.to_string().starts_with("p.rhai:"));
        }
    }

    #[test]
    fn the_loader_never_panics_on_arbitrary_dsl(name in "[a-zA-Z0-9_ !-]{0,70}", ty in "[a-z]{0,8}", opts in json_value()) {
        let opts = serde_json::to_string(&opts).unwrap_or_default();
        let src = format!("tool({name:?}).param(\"x\", {ty:?}, json_decode({opts:?})).handler(|a| 1);");
        let f = crate::script::loader::load_source(engine(), "p.rhai", &src);
        prop_assert!(f.tools.len() + f.errors.len() >= 1);
    }

    #[test]
    fn the_schema_compiler_never_panics(ty in "[a-z]{0,8}", opts in json_value()) {
        let map = opts.as_object().cloned().unwrap_or_default();
        if let Ok((schema, _)) = crate::schema::build_param("x", &ty, &map) {
            let obj = crate::schema::object_schema(&[crate::schema::Param { name: "x".into(), schema, required: true }]);
            prop_assert!(jsonschema::options().should_validate_formats(true).build(&obj).is_ok() || obj.is_object());
            for f in crate::schema::Format::NAMES {
                let (def, _) = crate::schema::export("t", "d", &obj, crate::schema::Format::parse(f).expect("format"));
                prop_assert!(def.is_object());
            }
        }
    }

    #[test]
    fn reply_parsers_never_panic_on_arbitrary_json(v in json_value()) {
        let _ = anthropic::parse_response(&v);
        let _ = openai::parse_response(&v);
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
        let _ = openai::parse_sse(&text, &sink());
        let mut state = ollama::ChatState::default();
        for line in text.lines() {
            if state.apply(line, &sink()).is_err() {
                break;
            }
        }
    }
}
