//! What traces cost a run: the same agent run of N tool rounds against `kiln mock`, with no
//! trace export and with every span exported over OTLP to a collector on loopback (one that
//! accepts and discards, so the collector's own work is not counted), interleaved in one run.
//!
//! `cargo bench --bench traces` measures (50 rounds, 41 samples); under `cargo test` it runs
//! once as a smoke test.

mod support;

use kiln::{Host, RunOptions};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use support::{cpu_time, median, ratio, show, start_mock, table};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Whether spans are exported now (the layer is installed once; this turns it on and off).
static EXPORTING: AtomicBool = AtomicBool::new(false);
/// Export requests the collector received.
static RECEIVED: AtomicUsize = AtomicUsize::new(0);

/// An OTLP/HTTP collector on 127.0.0.1 that reads each request whole and answers 200.
fn collector() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(conn);
                loop {
                    let mut len = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let l = line.trim().to_ascii_lowercase();
                        if l.is_empty() {
                            break;
                        }
                        if let Some(n) = l.strip_prefix("content-length:") {
                            len = n.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; len];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    RECEIVED.fetch_add(1, Ordering::Relaxed);
                    let reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if reader.get_mut().write_all(reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}/v1/traces")
}

async fn timed(host: &Host) -> (Duration, Duration) {
    let (wall, cpu) = (Instant::now(), cpu_time());
    host.run("bench", "go", RunOptions::default())
        .await
        .expect("run");
    (wall.elapsed(), cpu_time().saturating_sub(cpu))
}

fn main() {
    set_key();
    let measuring = support::measuring();
    let rounds = if measuring { 50 } else { 3 };
    let samples = if measuring { 41 } else { 1 };
    let exporter = kiln_otel::export::Exporter::start(&collector()).expect("exporter");
    let _ = tracing_subscriber::registry()
        .with(
            exporter
                .layer()
                // Dynamic: asked at every span, not cached per call site.
                .with_filter(tracing_subscriber::filter::dynamic_filter_fn(|_, _| {
                    EXPORTING.load(Ordering::Relaxed)
                })),
        )
        .try_init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let mut turns: Vec<Value> = (0..rounds - 1)
            .map(|i| json!({"tool_calls": [{"name": "calculator", "args": {"expression": format!("{i} * 3 + 1")}}]}))
            .collect();
        turns.push(json!({"text": "All done."}));
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut mock, base) = start_mock(
            &json!({"loop": true, "require_auth": false, "turns": turns}),
            dir.path(),
        );
        std::fs::write(
            dir.path().join("a.rhai"),
            format!("agent(\"bench\").provider(\"openai\").model(\"m\").base_url(\"{base}/v1\").tools([\"calculator\"]).max_iterations({rounds});"),
        )
        .expect("write");
        let host = Host::builder().scripts(dir.path()).build().expect("host");
        let mut off = Vec::new();
        let mut on = Vec::new();
        for _ in 0..samples {
            EXPORTING.store(false, Ordering::Relaxed);
            off.push(timed(&host).await);
            EXPORTING.store(true, Ordering::Relaxed);
            on.push(timed(&host).await);
        }
        EXPORTING.store(false, Ordering::Relaxed);
        let med = |v: &mut Vec<(Duration, Duration)>| {
            let mut wall: Vec<Duration> = v.iter().map(|t| t.0).collect();
            let mut cpu: Vec<Duration> = v.iter().map(|t| t.1).collect();
            (median(&mut wall), median(&mut cpu))
        };
        let (off, on) = (med(&mut off), med(&mut on));
        let per = |d: Duration| d / rounds as u32;
        let _ = mock.kill();
        exporter.shutdown();
        assert!(RECEIVED.load(Ordering::Relaxed) > 0, "the collector received the spans");
        table(
            &format!("Traces: one agent run of {rounds} model rounds ({} tool calls) against `kiln mock`, without trace export and with every span (invoke_agent, chat, execute_tool) exported over OTLP/HTTP to a collector on loopback, interleaved, median of {samples} (CPU: the whole process, the exporter's thread included):", rounds - 1),
            &["variant", "whole run", "per round", "CPU per round", "wall vs off", "CPU vs off"],
            &[
                vec!["export off".into(), show(off.0), show(per(off.0)), show(per(off.1)), "1.00x".into(), "1.00x".into()],
                vec!["export on".into(), show(on.0), show(per(on.0)), show(per(on.1)), ratio(on.0, off.0), ratio(on.1, off.1)],
            ],
        );
    });
}

/// The agent's provider wants a key in the environment (the mock does not check it).
fn set_key() {
    if std::env::var_os("OPENAI_API_KEY").is_none() {
        // SAFETY: called at the start of `main`, before any other thread exists.
        unsafe { std::env::set_var("OPENAI_API_KEY", "bench-key") };
    }
}
