//! Benchmarks: one validated in-process tool call (JSON in, JSON out), against a baseline of
//! schema validation alone, and loading 100 script files.

use criterion::{Criterion, criterion_group, criterion_main};
use kiln::capability::Grants;
use kiln::{Host, HostConfig};
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
    let config = HostConfig {
        scripts: vec![dir.path().to_path_buf()],
        stdlib: false,
        ..HostConfig::default()
    };
    let host = Host::new(config.clone()).expect("host");
    let tool = host.tool("tool_7").expect("tool");
    let ctx = host.context(Grants::default());
    let args = json!({"sku": "SKU-42", "qty": 3});

    c.bench_function("baseline: schema validation only", |b| {
        b.iter(|| black_box(tool.violations(black_box(&args))))
    });
    c.bench_function("validated tool call (JSON in, JSON out)", |b| {
        b.iter(|| {
            let outcome = tool.execute(black_box(&args), &ctx);
            black_box(outcome.to_json(false))
        })
    });
    c.bench_function("load 100 scripts", |b| {
        b.iter(|| black_box(Host::new(config.clone()).expect("host")))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
