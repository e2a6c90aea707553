//! Benchmarks: one validated in-process tool call (JSON in, JSON out), against a baseline of
//! schema validation alone, and loading 100 script files.

use criterion::{Criterion, criterion_group, criterion_main};
use kiln::{CallOptions, Host};
use serde_json::json;
use std::hint::black_box;

fn scripts(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..n {
        let src = format!(
            r#"tool("tool_{i}")
    .description("Tool number {i}")
    .param("sku", "string", #{{ pattern: "^SKU-[0-9]+$" }})
    .param("qty", "integer", #{{ min: 1, max: 100, optional: true }})
    .handler(|args, ctx| #{{ sku: args.sku, qty: args.qty ?? 1 }});
"#
        );
        std::fs::write(dir.path().join(format!("t{i}.rhai")), src).expect("write");
    }
    dir
}

fn bench(c: &mut Criterion) {
    let dir = scripts(100);
    let build = || {
        Host::builder()
            .scripts(dir.path())
            .stdlib(false)
            .build()
            .expect("host")
    };
    let host = build();
    let tool = host
        .tools()
        .into_iter()
        .find(|t| t.name == "tool_7")
        .expect("tool");
    // The same validator settings as kiln's (draft 2020-12, formats checked).
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&tool.schema)
        .expect("schema");
    let args = json!({"sku": "SKU-42", "qty": 3});

    c.bench_function("baseline: schema validation only", |b| {
        b.iter(|| black_box(validator.is_valid(black_box(&args))))
    });
    c.bench_function("validated tool call (JSON in, JSON out)", |b| {
        b.iter(|| {
            let outcome = host
                .call_blocking("tool_7", black_box(args.clone()), CallOptions::default())
                .expect("tool");
            black_box(outcome.to_json(false))
        })
    });
    c.bench_function("load 100 scripts", |b| b.iter(|| black_box(build())));
}

criterion_group!(benches, bench);
criterion_main!(benches);
