//! `docs/eval-report.schema.json` against what serde writes: a realistic report validates, a
//! report with a wrong type or an unknown key does not. `KILN_EVAL_SAMPLE_HTML=PATH` (and
//! `KILN_EVAL_SAMPLE_JSON`, `KILN_EVAL_SAMPLE_XML`) make `sample_files` write the sample out,
//! for the Python checks in tests/peers/eval.

use crate::report::Report;
use crate::sample::sample_report;
use serde_json::{Value, json};

const SCHEMA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../docs/eval-report.schema.json"
));

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema is JSON");
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("the schema compiles")
}

fn errors(value: &Value) -> Vec<String> {
    validator()
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn sample_report_validates() {
    let report = sample_report();
    assert!(report.results[1].run.error.is_some());
    assert!(!report.results[1].run.tool_calls[0].nested.is_empty());
    let value = serde_json::to_value(&report).expect("serializes");
    assert_eq!(errors(&value), Vec::<String>::new());
    // And it reads back as it was.
    let back: Report = serde_json::from_value(value).expect("deserializes");
    assert_eq!(back, report);
}

#[test]
fn empty_report_validates() {
    let report = Report {
        schema_version: crate::report::SCHEMA_VERSION,
        ..Report::default()
    };
    let value = serde_json::to_value(&report).expect("serializes");
    assert_eq!(errors(&value), Vec::<String>::new());
}

#[test]
fn broken_reports_are_rejected() {
    let good = serde_json::to_value(sample_report()).expect("serializes");
    type Break = (&'static str, fn(&mut Value));
    let breaks: [Break; 5] = [
        ("/summary/0/pass_rate", |v| {
            v["summary"][0]["pass_rate"] = json!("75%")
        }),
        ("", |v| v["surprise"] = json!(1)),
        ("/results/0/run", |v| {
            v["results"][0]["run"]["extra"] = json!(true)
        }),
        ("/comparison/cases/0/change", |v| {
            v["comparison"]["cases"][0]["change"] = json!("worse")
        }),
        ("/results/1/run/tool_calls/0/nested/0", |v| {
            v["results"][1]["run"]["tool_calls"][0]["nested"][0]
                .as_object_mut()
                .map(|o| o.remove("name"));
        }),
    ];
    for (path, break_it) in breaks {
        let mut bad = good.clone();
        break_it(&mut bad);
        let errs = errors(&bad);
        assert!(
            errs.iter().any(|e| e.starts_with(&format!("{path}: "))),
            "{path}: {errs:?}"
        );
    }
}

/// Writes the sample as HTML, JSON and JUnit XML where the env vars name a path (for the
/// Python checks); a no-op otherwise.
#[test]
fn sample_files() {
    let report = sample_report();
    type Output = (&'static str, fn(&Report) -> String);
    let outputs: [Output; 3] = [
        ("KILN_EVAL_SAMPLE_HTML", crate::render::html::render),
        ("KILN_EVAL_SAMPLE_XML", crate::render::junit::render),
        ("KILN_EVAL_SAMPLE_JSON", |r| {
            serde_json::to_string_pretty(r).unwrap_or_default()
        }),
    ];
    for (var, render) in outputs {
        if let Ok(path) = std::env::var(var) {
            std::fs::write(&path, render(&report)).expect("write the sample");
        }
    }
}
