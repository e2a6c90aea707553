//! Loop overhead: an agent run of N tool rounds against `kiln mock` on loopback, versus the same
//! number of bare HTTP round trips to the same mock carrying the very bodies kiln sent; without
//! a run log, with a recorder that keeps nothing (what handing each step over costs the loop),
//! and with the SQLite run log.
//!
//! `cargo bench --bench agent_loop` measures (50 rounds); under `cargo test` it runs once as a
//! smoke test. For instruction counts, `KILN_BENCH_PROFILE=kiln|handoff|logged|bare` with
//! `KILN_BENCH_RUNS=R` runs only that variant R times (run it under callgrind twice with two
//! values of R: the difference is the cost of R runs without the setup; the process exits
//! without tearing down, so no teardown is counted either).
//!
//! A second group ([`conversation`]) measures whether a round costs the same late in a long
//! conversation as early in it, on every wire format (rounds 1-100 against 101-200; 2 against
//! 2 under `cargo test`). `KILN_BENCH_PROFILE=long-WIRE` (or `long-WIRE-stream`) with
//! `KILN_BENCH_ROUNDS=N` runs only an N-round conversation (default 200) over that wire: two
//! values of N under callgrind give the cost of the rounds between them. `KILN_BENCH_GROUP=
//! conversation` runs only this group, `KILN_BENCH_SAMPLES=S` times each (default 15).

#[path = "support/conversation.rs"]
mod conversation;
#[path = "support/fake.rs"]
mod fake;
mod support;

use kiln::{Host, RunOptions, RunReport};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{cpu_time, median, ratio, show, start_mock, table};

async fn once(host: &Host) -> RunReport {
    host.run("bench", "go", RunOptions::default())
        .await
        .expect("run")
}

/// A recorder that keeps nothing: a run with it pays only for handing its steps over.
struct Handoff;

impl kiln::durable::Recorder for Handoff {
    fn started(&self, _: &RunReport) -> Result<(), kiln::durable::RecordError> {
        Ok(())
    }
    fn model_reply(
        &self,
        _: &str,
        _: u32,
        _: kiln::model::Usage,
        _: &kiln::model::StopReason,
        _: &kiln::model::AnsweredBy,
        _: Duration,
    ) {
    }
    fn step(
        &self,
        _: &str,
        _: usize,
        _: &[kiln::model::Message],
        _: &[kiln::durable::ToolCallRecord],
        _: &Value,
    ) -> Result<(), kiln::durable::RecordError> {
        Ok(())
    }
    fn ended(&self, _: &RunReport) -> Result<(), kiln::durable::RecordError> {
        Ok(())
    }
}

async fn handed_over(host: &Host) -> RunReport {
    let opts = RunOptions {
        recorder: Some(Arc::new(Handoff)),
        ..Default::default()
    };
    host.run("bench", "go", opts).await.expect("run")
}

/// Wall and CPU time (this process: the loop, or the bare client) of one sample.
async fn timed<F: std::future::Future>(f: F) -> (Duration, Duration) {
    let (t, cpu) = (Instant::now(), cpu_time());
    std::hint::black_box(f.await);
    (t.elapsed(), cpu_time().saturating_sub(cpu))
}

/// The bodies kiln sent, posted again over one pooled client.
async fn bare(client: &reqwest::Client, base: &str, bodies: &[Value]) {
    for body in bodies {
        let resp = client
            .post(format!("{base}/v1/chat/completions"))
            .json(body)
            .send()
            .await
            .expect("post");
        let v: Value = resp.json().await.expect("json");
        std::hint::black_box(v);
    }
}

fn main() {
    fake::serve_if_asked();
    conversation::set_keys();
    let measuring = support::measuring();
    let profile = std::env::var("KILN_BENCH_PROFILE").ok();
    let profiling = profile.is_some();
    let rounds: usize = std::env::var("KILN_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring || profile.is_some() {
            50
        } else {
            3
        });
    let samples = if measuring { 41 } else { 1 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if let Some(variant) = profile.as_deref().filter(|p| p.starts_with("long-")) {
        let total = std::env::var("KILN_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(200);
        let runs = std::env::var("KILN_BENCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1);
        runtime.block_on(conversation::profile(variant, total, runs));
        return;
    }
    // `KILN_BENCH_GROUP=conversation` measures only the long conversations.
    let only_conversation = std::env::var("KILN_BENCH_GROUP").is_ok_and(|g| g == "conversation");
    runtime.block_on(async move {
        if only_conversation {
            return;
        }
        // `rounds` model requests: rounds - 1 with a tool call, then the answer.
        let mut turns: Vec<Value> = (0..rounds - 1).map(|i| json!({"tool_calls": [{"name": "calculator", "args": {"expression": format!("{i} * 3 + 1")}}]})).collect();
        turns.push(json!({"text": "All done."}));
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut mock, base) = start_mock(&json!({"loop": true, "require_auth": false, "turns": turns}), dir.path());
        let client = kiln::egress::http_client_builder().no_proxy().build().expect("client");
        let agent = format!(
            "agent(\"bench\").provider(\"openai\").model(\"m\").base_url(\"{base}/v1\").tools([\"calculator\"]).max_iterations({rounds});"
        );
        std::fs::write(dir.path().join("a.rhai"), agent).expect("write");
        let host = Host::builder().scripts(dir.path()).build().expect("host");
        assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
        // The same host with the SQLite run log: every run is logged step by step.
        let logged = Host::builder().scripts(dir.path()).database(dir.path().join("bench.db")).build().expect("host");

        let report = once(&host).await;
        assert_eq!(report.rounds as usize, rounds);
        let recorded: Value = client.get(format!("{base}/_kiln/requests")).send().await.expect("get").json().await.expect("json");
        let bodies: Vec<Value> = recorded.as_array().expect("requests").iter().map(|r| r["body"].clone()).collect();
        assert_eq!(bodies.len(), rounds);

        if let Some(variant) = profile {
            let runs: usize = std::env::var("KILN_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
            for _ in 0..runs {
                match variant.as_str() {
                    "kiln" => drop(once(&host).await),
                    "handoff" => drop(handed_over(&host).await),
                    "logged" => drop(once(&logged).await),
                    "bare" => bare(&client, &base, &bodies).await,
                    other => panic!("KILN_BENCH_PROFILE={other}: kiln, handoff, logged or bare"),
                }
            }
            // Out without tearing down: closing the database frees SQLite's page cache, and
            // glibc consolidates the whole heap on that large free. Paid once per process,
            // it grows with the runs counted and would pass for a per-round cost.
            let _ = mock.kill();
            let _ = mock.wait();
            let _ = std::fs::remove_dir_all(dir.path());
            std::process::exit(0);
        } else {
            // Samples interleave the variants, so load on the machine hits them alike.
            let mut times: [Vec<(Duration, Duration)>; 4] = Default::default();
            for _ in 0..samples {
                times[0].push(timed(bare(&client, &base, &bodies)).await);
                times[1].push(timed(once(&host)).await);
                times[2].push(timed(handed_over(&host)).await);
                times[3].push(timed(once(&logged)).await);
            }
            let [b, k, h, l] = times.map(|mut v| {
                let mut wall: Vec<Duration> = v.iter().map(|t| t.0).collect();
                let mut cpu: Vec<Duration> = v.iter_mut().map(|t| t.1).collect();
                (median(&mut wall), median(&mut cpu))
            });
            let per = |d: Duration| d / rounds as u32;
            let row = |name: &str, (wall, cpu): (Duration, Duration)| {
                vec![
                    name.to_string(),
                    show(wall),
                    show(per(wall)),
                    ratio(wall, b.0),
                    if wall == b.0 { "-".into() } else { show(per(wall.saturating_sub(b.0))) },
                    show(per(cpu)),
                    ratio(cpu, b.1),
                ]
            };
            table(
                &format!("Loop cost per round, in process: one agent run of {rounds} model rounds ({} tool rounds) against `kiln mock` on loopback, vs the same {rounds} bare HTTP round trips (reqwest, the very bodies kiln sent), median of {samples} (CPU: this process, the loop or the bare client; the mock is another process):", rounds - 1),
                &["variant", "whole run", "per round", "vs bare round trips", "kiln's own time per round", "CPU per round", "CPU vs bare"],
                &[
                    row("bare Rust round trips (reqwest)", b),
                    row("kiln run, no run log", k),
                    row("kiln run, a recorder that keeps nothing", h),
                    row("kiln run, SQLite run log on", l),
                ],
            );
            let steps = rounds as u32; // one committed step per model round
            table(
                "Logging overhead per step, against the same run without a recorder: handing a step over (what the loop itself does per step) and the SQLite run log (its commit runs during the next model request, so on the critical path it costs only where the commit's CPU competes with the loop's):",
                &["variant", "whole run", "per step, wall", "vs no run log", "per step, CPU"],
                &[
                    vec!["no run log".into(), show(k.0), "-".into(), "1.00x".into(), "-".into()],
                    vec!["a recorder that keeps nothing".into(), show(h.0), show(h.0.saturating_sub(k.0) / steps), ratio(h.0, k.0), show(h.1.saturating_sub(k.1) / steps)],
                    vec!["SQLite run log".into(), show(l.0), show(l.0.saturating_sub(k.0) / steps), ratio(l.0, k.0), show(l.1.saturating_sub(k.1) / steps)],
                ],
            );
        }
        let _ = mock.kill();
        let _ = mock.wait();
    });
    if !profiling {
        let (lengths, samples) = if measuring {
            (
                conversation::Lengths {
                    early: 100,
                    total: 200,
                },
                std::env::var("KILN_BENCH_SAMPLES")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(15),
            )
        } else {
            (conversation::Lengths { early: 2, total: 4 }, 1)
        };
        runtime.block_on(conversation::measure(lengths, samples));
    }
}
