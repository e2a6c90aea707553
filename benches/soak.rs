//! The run log over time: many two-round runs through `kiln serve` (the real binary) with
//! `--log-retention`, from C concurrent clients in this process, against `kiln mock` (which
//! keeps no requests). Every twentieth of the way it samples the server's RSS, the run log's
//! size on disk (the database, its WAL and shared memory) and the throughput since the last
//! sample; then it prints them as a table.
//!
//! `cargo bench --bench soak` runs 1,000,000 runs with 32 clients and a 30 s retention (about
//! 12 minutes here); under `cargo test` 400 runs with a 1 s retention as a smoke test.
//! `KILN_SOAK_RUNS`, `KILN_SOAK_CLIENTS` and `KILN_SOAK_RETENTION` override them.

mod support;

use serde_json::{Value, json};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn var<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The run log's bytes on disk: the database, and its WAL with the shared memory.
fn log_bytes(db: &std::path::Path) -> (u64, u64) {
    let size = |s: &str| {
        std::fs::metadata(format!("{}{s}", db.display()))
            .map(|m| m.len())
            .unwrap_or(0)
    };
    (size(""), size("-wal") + size("-shm"))
}

fn main() {
    let measuring = support::measuring();
    let runs: usize = var("KILN_SOAK_RUNS", if measuring { 1_000_000 } else { 400 });
    let clients: usize = var("KILN_SOAK_CLIENTS", 32).max(1);
    let retention: String = var(
        "KILN_SOAK_RETENTION",
        if measuring { "30s" } else { "1s" }.to_string(),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(soak(runs, clients, &retention, measuring));
}

async fn soak(runs: usize, clients: usize, retention: &str, measuring: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = json!({"by_round": true, "record": false, "turns": [
        {"tool_calls": [{"name": "step", "args": {"n": 1}}]},
        {"text": "All done."},
    ]});
    let (mut mock_child, mock) = support::start_mock(&scenario, dir.path());
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).expect("scripts folder");
    std::fs::write(
        scripts.join("soak.rhai"),
        format!(
            r#"tool("step").description("One step").param("n", "int").handler(|a| #{{ n: a.n, ok: true }});
agent("soak").provider("openai").model("m").base_url("{mock}/v1").tools(["step"]);"#
        ),
    )
    .expect("write script");
    let db = dir.path().join("soak.db");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(["serve", "--bind", "127.0.0.1:0", "--no-stdlib", "--scripts"])
        .arg(&scripts)
        .arg("--db")
        .arg(&db)
        .args(["--log-retention", retention, "--run-timeout", "0"]);
    let (mut serve, base) = support::start_server(cmd);
    let url = Arc::new(format!("{base}/v1/chat/completions"));
    let client = kiln::egress::http_client_builder()
        .timeout(Duration::from_secs(120))
        .build()
        .expect("client");

    let pid = serve.id();
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            let (next, done, errors) = (next.clone(), done.clone(), errors.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    if !one_run(&client, &url).await {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut rows = vec![sample(0, 0.0, f64::NAN, pid, &db)];
    let every = (runs / 20).max(1);
    let (mut last_n, mut last_t) = (0usize, 0.0f64);
    while done.load(Ordering::Relaxed) < runs {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n = done.load(Ordering::Relaxed);
        if n >= last_n + every || n >= runs {
            let t = began.elapsed().as_secs_f64();
            let rate = (n - last_n) as f64 / (t - last_t).max(1e-9);
            rows.push(sample(n, t, rate, pid, &db));
            (last_n, last_t) = (n, t);
        }
    }
    for w in workers {
        w.await.expect("client task");
    }
    let peak_mb = support::proc_status(pid, "VmHWM:") as f64 / 1024.0;
    let _ = serve.kill();
    let _ = serve.wait();
    let _ = mock_child.kill();
    let _ = mock_child.wait();
    let errors = errors.load(Ordering::Relaxed);
    if measuring {
        support::table(
            &format!(
                "Soak: {runs} two-round runs through `kiln serve --log-retention {retention}`, \
                 {clients} concurrent clients, against `kiln mock`; errors: {errors}; the \
                 server's peak RSS {peak_mb:.0} MB"
            ),
            &[
                "runs done",
                "time",
                "runs/s since the last row",
                "server RSS",
                "database",
                "WAL and shared memory",
            ],
            &rows,
        );
    }
    println!(
        "\nsoak: {}",
        json!({"runs": runs, "clients": clients, "retention": retention, "errors": errors,
               "peak_rss_mb": peak_mb, "final_db_mb": log_bytes(&db).0 as f64 / 1e6})
    );
    assert_eq!(errors, 0, "{errors} of {runs} runs failed");
}

fn sample(n: usize, t: f64, rate: f64, pid: u32, db: &std::path::Path) -> Vec<String> {
    vec![
        n.to_string(),
        format!("{t:.0} s"),
        if rate.is_nan() {
            "-".into()
        } else {
            format!("{rate:.0}")
        },
        format!(
            "{:.1} MB",
            support::proc_status(pid, "VmRSS:") as f64 / 1024.0
        ),
        format!("{:.1} MB", log_bytes(db).0 as f64 / 1e6),
        format!("{:.1} MB", log_bytes(db).1 as f64 / 1e6),
    ]
}

/// One run; whether it answered as expected.
async fn one_run(client: &reqwest::Client, url: &str) -> bool {
    let body = json!({"model": "soak", "messages": [{"role": "user", "content": "go"}]});
    match client.post(url).json(&body).send().await {
        Ok(r) if r.status().is_success() => r
            .json::<Value>()
            .await
            .is_ok_and(|b| b["choices"][0]["message"]["content"] == "All done."),
        Ok(r) => {
            eprintln!(
                "HTTP {}: {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
            false
        }
        Err(e) => {
            eprintln!("request failed: {e}");
            false
        }
    }
}
