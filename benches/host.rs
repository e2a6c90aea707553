//! One validated in-process tool call (JSON in, JSON out) against schema validation alone,
//! loading 10 / 100 / 1,000 script files against reading and compiling them with Rhai alone,
//! and decoding one long SSE line that arrives in many chunks against the same bytes as many
//! events (the two should be close: decoding is linear in the bytes received).
//! `cargo bench --bench host` measures; under `cargo test` it runs once with tiny inputs.

mod support;

use kiln::{CallOptions, Host};
use serde_json::json;
use std::hint::black_box;
use support::{measuring, per_iter, ratio, show, table};

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

fn build(dir: &std::path::Path) -> std::sync::Arc<Host> {
    Host::builder()
        .scripts(dir)
        .stdlib(false)
        .build()
        .expect("host")
}

/// What Rhai alone does with the same files: read each and compile it (engine made once).
fn read_and_compile(engine: &rhai::Engine, dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).expect("dir") {
        let src = std::fs::read_to_string(entry.expect("entry").path()).expect("read");
        n += engine.compile(&src).expect("compile").statements().len();
    }
    n
}

fn main() {
    let measuring = measuring();
    let (samples, iters) = if measuring { (15, 2000) } else { (1, 1) };

    let dir = scripts(10);
    let host = build(dir.path());
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
    let alone = per_iter(samples, iters, || {
        black_box(validator.is_valid(black_box(&args)));
    });
    let call = per_iter(samples, iters, || {
        let outcome = host
            .call_blocking("tool_7", black_box(args.clone()), CallOptions::default())
            .expect("tool");
        black_box(outcome.to_json(false));
    });
    table(
        &format!("Validated call vs validation alone (median of {samples} × {iters}):"),
        &["operation", "per call", "vs validation alone"],
        &[
            vec![
                "schema validation alone (jsonschema, kiln's settings)".into(),
                show(alone),
                "1.00x".into(),
            ],
            vec![
                "validated tool call: JSON in, Rhai handler, JSON out".into(),
                show(call),
                ratio(call, alone),
            ],
        ],
    );

    // Code mode: a call from inside a program against the same call made directly.
    let mode = kiln_registry::agent_spec::CodeMode {
        max_calls: 1_000_000,
        ..Default::default()
    };
    let run_code = kiln_script::program::code_mode::code_tools(&host.tools(), &mode)
        .into_iter()
        .next()
        .expect("run_code");
    let calls = if measuring { 2000 } else { 2 };
    let program = |n: u32| json!({"code": format!(r#"for i in 0..{n} {{ tool_7(#{{ sku: "SKU-42", qty: 3 }}); }} 1"#)});
    let (full, empty) = (program(calls), program(0));
    let ctx = host.context(kiln::Grants::default());
    let with_calls = per_iter(samples, 1, || {
        black_box(run_code.execute(&full, &ctx).result.expect("program"));
    });
    let without = per_iter(samples, 1, || {
        black_box(run_code.execute(&empty, &ctx).result.expect("program"));
    });
    let nested = with_calls.saturating_sub(without) / calls;
    table(
        &format!(
            "A nested call in a code-mode program vs Host::call_blocking (median of {samples}; {calls} calls a program, the empty program's cost taken off):"
        ),
        &["operation", "per call", "vs Host::call_blocking", "added"],
        &[
            vec![
                "Host::call_blocking (as above)".into(),
                show(call),
                "1.00x".into(),
                "-".into(),
            ],
            vec![
                "the same call from a run_code program".into(),
                show(nested),
                ratio(nested, call),
                show(nested.saturating_sub(call)),
            ],
        ],
    );

    let sizes: &[usize] = if measuring { &[10, 100, 1000] } else { &[10] };
    let mut rows = Vec::new();
    for &n in sizes {
        let dir = scripts(n);
        let (s, i) = if measuring {
            (7, (2000 / n as u32).max(1))
        } else {
            (1, 1)
        };
        let kiln = per_iter(s, i, || {
            black_box(build(dir.path()));
        });
        let engine = rhai::Engine::new();
        let bare = per_iter(s, i, || {
            black_box(read_and_compile(&engine, dir.path()));
        });
        rows.push(vec![
            format!("{n} files"),
            show(kiln),
            show(bare),
            ratio(kiln, bare),
        ]);
    }
    table(
        "Script loading: Host::build over N files of one tool each (compile, run the top level, build schemas and validators) vs reading + compiling the same files with Rhai alone:",
        &[
            "files",
            "kiln load",
            "baseline: read + Rhai compile",
            "ratio",
        ],
        &rows,
    );
    sse(measuring);
}

fn sse(measuring: bool) {
    use kiln::bench::SseDecoder;
    let total: usize = if measuring { 4 << 20 } else { 64 << 10 };
    let long_line: Vec<u8> = [b"data: ".as_slice(), &vec![b'x'; total], b"\n\n"].concat();
    let many_events =
        "data: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n\n".repeat(total / 64);
    let decode = |bytes: &[u8]| {
        let mut d = SseDecoder::new(8 << 20);
        let mut events = 0;
        for chunk in bytes.chunks(16 << 10) {
            events += d.push(chunk).expect("under the limit").len();
        }
        black_box(events)
    };
    let samples = if measuring { 11 } else { 1 };
    let many = per_iter(samples, 1, || {
        decode(many_events.as_bytes());
    });
    let long = per_iter(samples, 1, || {
        decode(&long_line);
    });
    table(
        &format!(
            "SSE decoding, {} KiB in 16 KiB chunks (median of {samples}): one long line vs the same bytes as many short events:",
            total >> 10
        ),
        &["input", "decode", "vs many events"],
        &[
            vec!["many short events".into(), show(many), "1.00x".into()],
            vec!["one long line".into(), show(long), ratio(long, many)],
        ],
    );
}
