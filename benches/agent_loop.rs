//! Loop overhead: an agent run of N tool rounds against `kiln mock` on loopback, versus the same
//! number of bare HTTP round trips to the same mock carrying the very bodies kiln sent.
//!
//! `cargo bench --bench agent_loop` measures; under `cargo test` it runs once as a smoke test.

use kiln::{Host, RunOptions, RunReport};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

const ROUNDS: usize = 10;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn once(host: &Host) -> RunReport {
    host.run("bench", "go", RunOptions::default())
        .await
        .expect("run")
}

/// `kiln mock` (the real binary) serving `scenario` on loopback; its base URL.
fn start_mock(scenario: &Value, dir: &std::path::Path) -> (std::process::Child, String) {
    let file = dir.join("scenario.json");
    std::fs::File::create(&file)
        .and_then(|mut f| f.write_all(scenario.to_string().as_bytes()))
        .expect("write scenario");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(["mock", &file.display().to_string(), "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start kiln mock");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("mock prints its address");
    let url = line.trim().rsplit(' ').next().expect("url").to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "mock said: {line}");
    (child, url)
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let samples = if measuring { 60 } else { 2 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let mut turns: Vec<Value> = (0..ROUNDS).map(|i| json!({"tool_calls": [{"name": "calculator", "args": {"expression": format!("{i} * 3 + 1")}}]})).collect();
        turns.push(json!({"text": "All done."}));
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut mock, base) = start_mock(&json!({"loop": true, "require_auth": false, "turns": turns}), dir.path());
        let client = kiln::http_client_builder().no_proxy().build().expect("client");
        let agent = format!(
            "agent(\"bench\").provider(\"openai\").model(\"m\").base_url(\"{base}/v1\").tools([\"calculator\"]).max_tool_iterations({});",
            ROUNDS + 1
        );
        std::fs::write(dir.path().join("a.rhai"), agent).expect("write");
        let host = Host::builder().scripts(dir.path()).build().expect("host");
        assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
        // The same host with the SQLite run log: every run is logged step by step.
        let logged = Host::builder().scripts(dir.path()).database(dir.path().join("bench.db")).build().expect("host");

        let report = once(&host).await;
        assert_eq!(report.rounds as usize, ROUNDS + 1);
        let recorded: Value = client.get(format!("{base}/_kiln/requests")).send().await.expect("get").json().await.expect("json");
        let bodies: Vec<Value> = recorded.as_array().expect("requests").iter().map(|r| r["body"].clone()).collect();
        assert_eq!(bodies.len(), ROUNDS + 1);

        let mut kiln_times = Vec::new();
        let mut bare_times = Vec::new();
        let mut logged_times = Vec::new();
        for _ in 0..samples {
            let t = Instant::now();
            std::hint::black_box(once(&host).await);
            kiln_times.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(once(&logged).await);
            logged_times.push(t.elapsed());
            let t = Instant::now();
            for body in &bodies {
                let resp = client.post(format!("{base}/v1/chat/completions")).json(body).send().await.expect("post");
                let v: Value = resp.json().await.expect("json");
                std::hint::black_box(v);
            }
            bare_times.push(t.elapsed());
        }
        let (k, b, l) = (median(kiln_times), median(bare_times), median(logged_times));
        let per_round = (k.saturating_sub(b)) / (ROUNDS as u32 + 1);
        println!("agent loop, {} model rounds ({} tool rounds) against kiln mock on loopback, {samples} samples:", ROUNDS + 1, ROUNDS);
        println!("  bare HTTP round trips (same bodies): median {:>8.3} ms", b.as_secs_f64() * 1e3);
        println!("  kiln agent run:                      median {:>8.3} ms", k.as_secs_f64() * 1e3);
        println!("  ratio kiln / bare: {:.3}  (kiln's own time per round: {:.3} ms)", k.as_secs_f64() / b.as_secs_f64(), per_round.as_secs_f64() * 1e3);
        println!("  kiln agent run with the SQLite run log: median {:>8.3} ms", l.as_secs_f64() * 1e3);
        println!(
            "  logging overhead: ratio logged / unlogged {:.3} ({:.3} ms per tool call)",
            l.as_secs_f64() / k.as_secs_f64(),
            l.saturating_sub(k).as_secs_f64() * 1e3 / ROUNDS as f64
        );
        let _ = mock.kill();
        let _ = mock.wait();
    });
}
