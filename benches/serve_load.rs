//! Load: N concurrent Chat Completions requests to `kiln serve` (the real binary), each a run of
//! R model rounds (a tool call in every round but the last) against `kiln mock` (also the real
//! binary) on loopback, all from this one client process.
//!
//! Reports errors, throughput, the added latency per round (the client's time for a run minus
//! the model requests' time as the run log measured it, divided by the rounds: kiln's HTTP
//! front, tool calls, run-log commits and scheduling) and the server's peak RSS.
//!
//! `cargo bench --bench serve_load` runs 1,000 runs of 5 rounds; under `cargo test` it runs a
//! few tiny runs as a smoke test. `KILN_LOAD_RUNS` / `KILN_LOAD_ROUNDS` override the sizes.

use serde_json::{Value, json};
use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn size(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Starts the real `kiln` binary with `args`; its first stdout line ends with its URL.
fn start(args: &[&str]) -> (String, std::process::Child) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .args(args)
        .env("OPENAI_API_KEY", "sk-load")
        .env("KILN_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("start kiln");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("kiln prints its address");
    let url = line.trim().rsplit(' ').next().expect("url").to_string();
    (url, child)
}

/// Peak resident set size of a process, from /proc (kB).
fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let runs = size("KILN_LOAD_RUNS", if measuring { 1000 } else { 8 });
    let rounds = size("KILN_LOAD_ROUNDS", if measuring { 5 } else { 2 }).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(load(runs, rounds));
}

async fn load(runs: usize, rounds: usize) {
    let mut turns: Vec<Value> = (1..rounds)
        .map(|i| json!({"tool_calls": [{"name": "step", "args": {"n": i}}]}))
        .collect();
    turns.push(json!({"text": "All done."}));
    let dir = tempfile::tempdir().expect("tempdir");
    let scenario = dir.path().join("scenario.json");
    std::fs::write(
        &scenario,
        json!({"by_round": true, "turns": turns}).to_string(),
    )
    .expect("write scenario");
    let (mock, mut mock_child) = start(&["mock", &scenario.display().to_string(), "--port", "0"]);
    std::fs::write(
        dir.path().join("load.rhai"),
        format!(
            r#"tool("step").description("One step").param("n", "int").handler(|a| #{{ n: a.n, ok: true }});
agent("load").provider("openai").model("m").base_url("{mock}/v1").tools(["step"]).max_tool_iterations({});"#,
            rounds + 1
        ),
    )
    .expect("write script");
    let db = dir.path().join("k.db");
    let n = runs.to_string();
    let db_arg = db.display().to_string();
    let scripts = dir.path().display().to_string();
    let (base, mut serve) = start(&[
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--no-stdlib",
        "--scripts",
        &scripts,
        "--db",
        &db_arg,
        "--max-runs",
        &n,
        "--queue",
        &n,
        "--run-timeout",
        "0",
    ]);
    let url = format!("{base}/v1/chat/completions");
    let client = kiln::egress::http_client_builder()
        .pool_max_idle_per_host(runs)
        .timeout(Duration::from_secs(600))
        .build()
        .expect("client");

    // One run at a time first: kiln's own cost per round without contention.
    let mut alone = Vec::new();
    for i in 0..(runs / 50).max(2) {
        match one_run(&client, &url, i).await {
            (Some(id), took) => alone.push((id, took)),
            (None, _) => panic!("a sequential run failed"),
        }
    }
    let began = Instant::now();
    let tasks: Vec<_> = (0..runs)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(async move { one_run(&client, &url, i).await })
        })
        .collect();
    let mut done = Vec::new();
    let mut errors = 0;
    for t in tasks {
        match t.await.expect("client task") {
            (Some(id), took) => done.push((id, took)),
            (None, _) => errors += 1,
        }
    }
    let wall = began.elapsed();
    let peak_kb = peak_rss_kb(serve.id());
    for child in [&mut serve, &mut mock_child] {
        let _ = child.kill();
        let _ = child.wait();
    }

    let conn = rusqlite::Connection::open(&db).expect("open the run log");
    let added = added_per_round(&conn, &done, rounds);
    let alone = added_per_round(&conn, &alone, rounds);
    let summary = json!({
        "runs": runs,
        "rounds_per_run": rounds,
        "errors": errors,
        "wall_s": wall.as_secs_f64(),
        "runs_per_s": done.len() as f64 / wall.as_secs_f64(),
        "rounds_per_s": (done.len() * rounds) as f64 / wall.as_secs_f64(),
        "added_ms_per_round_p50": percentile(&added, 0.5),
        "added_ms_per_round_p99": percentile(&added, 0.99),
        "alone_runs": alone.len(),
        "alone_added_ms_per_round_p50": percentile(&alone, 0.5),
        "alone_added_ms_per_round_p99": percentile(&alone, 0.99),
        "server_peak_rss_mb": peak_kb.map(|kb| kb as f64 / 1024.0),
    });
    println!("serve_load: {summary}");
    assert_eq!(errors, 0, "{errors} of {runs} runs failed");
}

/// One Chat Completions request: the run id when it answered as expected, and its duration.
async fn one_run(client: &reqwest::Client, url: &str, i: usize) -> (Option<String>, Duration) {
    let start = Instant::now();
    let resp = client
        .post(url)
        .json(
            &json!({"model": "load", "messages": [{"role": "user", "content": format!("go {i}")}]}),
        )
        .send()
        .await;
    let body: Option<Value> = match resp {
        Ok(r) if r.status().is_success() => r.json().await.ok(),
        Ok(r) => {
            eprintln!(
                "HTTP {}: {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
            None
        }
        Err(e) => {
            eprintln!("request failed: {e}");
            None
        }
    };
    let id = body
        .filter(|b| b["choices"][0]["message"]["content"] == "All done.")
        .and_then(|b| b["kiln"]["run_id"].as_str().map(str::to_string));
    (id, start.elapsed())
}

/// Per run, sorted: (the client's time - the model requests' time in the run log) / rounds, ms.
fn added_per_round(
    conn: &rusqlite::Connection,
    runs: &[(String, Duration)],
    rounds: usize,
) -> Vec<f64> {
    let mut model_ms = conn
        .prepare_cached(
            "SELECT COALESCE(SUM(duration_ms), 0), COUNT(*) FROM model_calls WHERE run_id = ?1",
        )
        .expect("query");
    let mut added: Vec<f64> = runs
        .iter()
        .map(|(id, took)| {
            let (ms, count): (f64, i64) = model_ms
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("model calls of a run");
            assert_eq!(
                count as usize, rounds,
                "run {id} made {count} model requests"
            );
            (took.as_secs_f64() * 1000.0 - ms) / rounds as f64
        })
        .collect();
    added.sort_by(f64::total_cmp);
    added
}
