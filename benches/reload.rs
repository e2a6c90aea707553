//! Reload latency with 10 / 100 / 1,000 tools loaded: a script file written -> its new version
//! answering (the watcher's debounce included), against a bare file watcher with the same
//! debounce seeing the same write. `cargo bench --bench reload`; under `cargo test` a smoke run.

mod support;

use kiln::{CallOptions, Host};
use notify_debouncer_full::notify::RecursiveMode;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use support::{measuring, median, ratio, show, table};

/// A folder of `tools` tools, ten per file, one of them `target` alone in target.rhai.
fn folder(tools: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for f in 0..(tools - 1).div_ceil(10) {
        let src: String = (0..10)
            .filter(|i| f * 10 + i < tools - 1)
            .map(|i| format!("tool(\"t_{f}_{i}\").param(\"x\", \"integer\", #{{ optional: true }}).handler(|a| {i});\n"))
            .collect();
        std::fs::write(dir.path().join(format!("f{f}.rhai")), src).expect("write");
    }
    std::fs::write(
        dir.path().join("target.rhai"),
        "tool(\"target\").handler(|a| 0);",
    )
    .expect("write");
    dir
}

/// Write -> the new version answering, through `host.watch()`.
fn kiln_reloads(dir: &Path, tools: usize, reloads: usize) -> Duration {
    let host = Host::builder()
        .scripts(dir)
        .stdlib(false)
        .build()
        .expect("host");
    assert_eq!(host.tools().len(), tools);
    let _watcher = host.watch().expect("watch");
    std::thread::sleep(Duration::from_millis(200));
    let target = dir.join("target.rhai");
    let mut times = Vec::new();
    for i in 1..=reloads {
        let want = json!(i);
        let started = Instant::now();
        std::fs::write(&target, format!("tool(\"target\").handler(|a| {i});")).expect("write");
        loop {
            let answer: Option<Value> = host
                .call_blocking("target", json!({}), CallOptions::default())
                .ok()
                .and_then(|o| o.result.ok());
            if answer.as_ref() == Some(&want) {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "reload {i} never arrived"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        times.push(started.elapsed());
    }
    median(&mut times)
}

/// Write -> a bare debounced watcher (kiln's settings) reporting the event.
fn bare_watcher(dir: &Path, reloads: usize) -> Duration {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut debouncer = notify_debouncer_full::new_debouncer(
        kiln::bench::RELOAD_DEBOUNCE,
        Some(kiln::bench::RELOAD_DEBOUNCE / 4),
        move |r| {
            let _ = tx.send(r);
        },
    )
    .expect("debouncer");
    debouncer
        .watch(dir, RecursiveMode::Recursive)
        .expect("watch");
    std::thread::sleep(Duration::from_millis(200));
    while rx.try_recv().is_ok() {}
    let target = dir.join("target.rhai");
    let mut times = Vec::new();
    for i in 1..=reloads {
        let started = Instant::now();
        std::fs::write(&target, format!("tool(\"target\").handler(|a| {i});")).expect("write");
        let _ = rx.recv_timeout(Duration::from_secs(10)).expect("event");
        times.push(started.elapsed());
        // Let the debouncer's follow-up events pass before the next write.
        while rx.recv_timeout(kiln::bench::RELOAD_DEBOUNCE * 2).is_ok() {}
    }
    median(&mut times)
}

fn main() {
    let measuring = measuring();
    let (sizes, reloads): (&[usize], usize) = if measuring {
        (&[10, 100, 1000], 30)
    } else {
        (&[10], 2)
    };
    let mut rows = Vec::new();
    for &tools in sizes {
        let dir = folder(tools);
        let kiln = kiln_reloads(dir.path(), tools, reloads);
        let bare = bare_watcher(dir.path(), reloads);
        rows.push(vec![
            format!("{tools} tools"),
            show(kiln),
            show(bare),
            ratio(kiln, bare),
        ]);
    }
    table(
        &format!(
            "Reload latency, file written -> new version answering (median of {reloads}), vs a bare debounced watcher ({} ms debounce) seeing the same write:",
            kiln::bench::RELOAD_DEBOUNCE.as_millis()
        ),
        &[
            "tools loaded",
            "kiln reload",
            "baseline: bare watcher event",
            "ratio",
        ],
        &rows,
    );
}
