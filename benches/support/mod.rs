//! What every bench shares: measuring vs smoke mode, medians, and markdown table output.
#![allow(dead_code)]

use std::time::{Duration, Instant};

pub mod certs;

// The allocator the `kiln` binary uses, so in-process runs and the bare proxy (this binary
// again) allocate as `kiln serve` does.
#[global_allocator]
static ALLOCATOR: kiln::budget::Counting<mimalloc::MiMalloc> =
    kiln::budget::Counting(mimalloc::MiMalloc);

/// True under `cargo bench` (which passes `--bench`); a smoke run under `cargo test`.
pub fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// CPU time this process's live threads have run so far (the sum of their
/// `/proc/self/task/*/schedstat`, in nanoseconds: tick-based counters are too coarse for one
/// run). Zero where that is not available.
pub fn cpu_time() -> Duration {
    cpu_time_in("self")
}

/// [`cpu_time`] of process `pid`.
pub fn cpu_time_of(pid: u32) -> Duration {
    cpu_time_in(&pid.to_string())
}

fn cpu_time_in(process: &str) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{process}/task")) else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// The median of `samples` timings of `f`, each over `iters` iterations, per iteration.
pub fn per_iter(samples: usize, iters: u32, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed() / iters
        })
        .collect();
    median(&mut times)
}

/// The median of `v`.
pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A duration in the unit that reads best.
pub fn show(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1.0 {
        format!("{:.0} ns", us * 1000.0)
    } else if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.2} ms", us / 1000.0)
    }
}

/// `a / b` as a ratio.
pub fn ratio(a: Duration, b: Duration) -> String {
    format!("{:.2}x", a.as_secs_f64() / b.as_secs_f64().max(1e-12))
}

/// Prints a markdown table.
pub fn table(title: &str, header: &[&str], rows: &[Vec<String>]) {
    println!("\n{title}\n");
    println!("| {} |", header.join(" | "));
    println!(
        "|{}|",
        header
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in rows {
        println!("| {} |", r.join(" | "));
    }
}

/// `kiln mock` (the real binary) serving `scenario` on loopback; its base URL.
pub fn start_mock(
    scenario: &serde_json::Value,
    dir: &std::path::Path,
) -> (std::process::Child, String) {
    let file = dir.join("scenario.json");
    std::fs::File::create(&file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, scenario.to_string().as_bytes()))
        .expect("write scenario");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args(["mock", &file.display().to_string(), "--port", "0"]);
    start_server(cmd)
}

/// Starts `cmd` (a kiln server, or the bench binary as one), with a dummy OpenAI key and
/// quiet logs; its first stdout line ends with its loopback URL. The child and the URL.
pub fn start_server(mut cmd: std::process::Command) -> (std::process::Child, String) {
    let mut child = cmd
        .env("OPENAI_API_KEY", "sk-bench")
        .env("KILN_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start a server");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("the server prints its address");
    let url = line.trim().rsplit(' ').next().expect("url").to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"),
        "the server said: {line}"
    );
    (child, url)
}

/// The `p` quantile (0..1) of `sorted`; NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// A number field of /proc/PID/status (`VmRSS:`, `VmHWM:` in kB; `Threads:`); 0 if absent.
pub fn proc_status(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Writes `NAME.rhai` into `scripts`: a `step` tool and an agent NAME of at most `rounds` tool
/// rounds (then its answer) on the OpenAI wire at `url`.
pub fn write_step_agent(scripts: &std::path::Path, name: &str, url: &str, rounds: usize) {
    std::fs::write(
        scripts.join(format!("{name}.rhai")),
        format!(
            r#"tool("step").description("One step").param("n", "int").handler(|a| #{{ n: a.n, ok: true }});
agent("{name}").provider("openai").model("m").base_url("{url}/v1").tools(["step"]).max_iterations({});"#,
            rounds + 1
        ),
    )
    .expect("write script");
}

/// `kiln serve` (the real binary) on a loopback port with `scripts`, no stdlib and no console;
/// the caller adds its limits.
pub fn kiln_serve(scripts: &std::path::Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.args([
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--no-stdlib",
        "--no-console",
    ])
    .arg("--scripts")
    .arg(scripts);
    cmd
}

/// POSTs `body` as JSON; the reply's JSON when it succeeded, else `None` after saying why.
pub async fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Option<serde_json::Value> {
    match client.post(url).json(body).send().await {
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
    }
}

/// The time a kiln run's model requests took (ms) and how many there were, from its run log.
pub fn model_ms_of(conn: &rusqlite::Connection, id: &str) -> (f64, usize) {
    let (ms, count): (f64, i64) = conn
        .prepare_cached(
            "SELECT COALESCE(SUM(duration_ms), 0), COUNT(*) FROM model_calls WHERE run_id = ?1",
        )
        .and_then(|mut s| s.query_row([id], |r| Ok((r.get(0)?, r.get(1)?))))
        .expect("model calls of a run");
    (ms, count as usize)
}
