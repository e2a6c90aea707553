//! Reload latency: a script file written -> its new version answering, with 1,000 tools loaded.
//! Includes the watcher's debounce. `cargo bench --bench reload`; under `cargo test` a smoke run.

use kiln::{CallOptions, Host};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let reloads = if measuring { 100 } else { 3 };
    let dir = tempfile::tempdir().expect("tempdir");
    for f in 0..100 {
        let src: String = (0..10).map(|i| format!("tool(\"t_{f}_{i}\").param(\"x\", \"integer\", #{{ optional: true }}).handler(|a| {i});\n")).collect();
        std::fs::write(dir.path().join(format!("f{f}.rhai")), src).expect("write");
    }
    let target = dir.path().join("target.rhai");
    std::fs::write(&target, "tool(\"target\").handler(|a| 0);").expect("write");
    let host = Host::builder()
        .scripts(dir.path())
        .stdlib(false)
        .build()
        .expect("host");
    assert_eq!(host.tools().len(), 1001);
    let _watcher = host.watch().expect("watch");
    std::thread::sleep(Duration::from_millis(200));
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
            std::thread::sleep(Duration::from_micros(500));
        }
        times.push(started.elapsed());
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "reload latency with 1,001 tools loaded, {reloads} reloads (write -> new version answering, the watcher's debounce included):"
    );
    println!(
        "  median {:.1} ms, worst {:.1} ms, best {:.1} ms",
        ms(times[times.len() / 2]),
        ms(times[times.len() - 1]),
        ms(times[0])
    );
}
