//! `kiln serve` against a bare proxy: N concurrent Chat Completions requests (1, 100 and 1,000
//! at a time), each a run of R model rounds (a tool call in every round but the last) against
//! `kiln mock` on loopback, all from this one client process. The floor is the bare proxy
//! (`support/bare_proxy.rs`): the same HTTP stack and client, the same round trips, no tools,
//! validation or log. kiln runs with its run log on.
//!
//! For each concurrency, kiln and the floor alternate (kiln, floor, floor, kiln), each pass in a
//! fresh server process. Reported: throughput, the added latency per round (the client's time
//! for a run minus the time its model requests took, as kiln's run log or the proxy measured
//! it, divided by the rounds), the server's CPU per run and its peak RSS.
//!
//! `cargo bench --bench serve_load`; under `cargo test` it runs a few tiny runs as a smoke test.
//! `KILN_LOAD_LEVELS=1,100,1000`, `KILN_LOAD_RUNS` (runs per pass, every level) and
//! `KILN_LOAD_ROUNDS` override the sizes; `KILN_SERVE_BIN` runs another build of `kiln` in
//! kiln's passes (to compare two commits against the same floor).

#[path = "support/bare_proxy.rs"]
mod bare_proxy;
mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// CPU time (user + system) a process has used, from /proc (clock ticks of 10 ms).
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn main() {
    if let Some(mock) = var(bare_proxy::ENV) {
        bare_proxy::run(&mock);
        return;
    }
    let measuring = support::measuring();
    let levels: Vec<usize> = var("KILN_LOAD_LEVELS")
        .unwrap_or_else(|| if measuring { "1,100,1000" } else { "1,4" }.into())
        .split(',')
        .filter_map(|l| l.trim().parse().ok())
        .filter(|&l| l > 0)
        .collect();
    let rounds = var("KILN_LOAD_ROUNDS")
        .and_then(|v| v.parse().ok())
        .unwrap_or(5usize)
        .max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(load(&levels, rounds, measuring));
}

/// Runs per pass at a concurrency: enough for a p99 and a few seconds of load.
fn runs_at(level: usize, measuring: bool) -> usize {
    if let Some(n) = var("KILN_LOAD_RUNS").and_then(|v| v.parse().ok()) {
        return n;
    }
    match (measuring, level) {
        (false, l) => 2 * l,
        (true, 1) => 200,
        (true, l) => (5 * l).max(1000),
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Server {
    Kiln,
    Floor,
}

/// What the passes of one server at one concurrency measured.
#[derive(Default)]
struct Measured {
    runs: usize,
    errors: usize,
    wall: f64,
    cpu: f64,
    added_ms: Vec<f64>,
    /// Each run's whole time at the client (ms).
    run_ms: Vec<f64>,
    peak_kb: u64,
}

async fn load(levels: &[usize], rounds: usize, measuring: bool) {
    let mut turns: Vec<Value> = (1..rounds)
        .map(|i| json!({"tool_calls": [{"name": "step", "args": {"n": i}}]}))
        .collect();
    turns.push(json!({"text": "All done."}));
    let dir = tempfile::tempdir().expect("tempdir");
    // The run logs live beside the scripts folder, not in it: the reload watcher would see
    // every write.
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).expect("scripts folder");
    let scenario = json!({"by_round": true, "record": false, "turns": turns});
    let (mut mock_child, mock) = support::start_mock(&scenario, dir.path());
    support::write_step_agent(&scripts, "load", &mock, rounds);
    let client = kiln::egress::http_client_builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("client");

    let mut rows = Vec::new();
    let mut summary = Vec::new();
    for &level in levels {
        let runs = runs_at(level, measuring);
        let (mut kiln, mut floor) = (Measured::default(), Measured::default());
        for (pass, server) in [Server::Kiln, Server::Floor, Server::Floor, Server::Kiln]
            .into_iter()
            .enumerate()
        {
            let into = if server == Server::Kiln {
                &mut kiln
            } else {
                &mut floor
            };
            let db = dir.path().join(format!("k-{level}-{pass}.db"));
            one_pass(
                server, &client, &mock, &scripts, &db, level, runs, rounds, into,
            )
            .await;
        }
        for (name, m) in [("kiln", &kiln), ("floor", &floor)] {
            summary.push(json!({
                "server": name, "concurrency": level, "runs": m.runs, "errors": m.errors,
                "runs_per_s": m.runs as f64 / m.wall,
                "added_ms_per_round_p50": support::percentile(&m.added_ms, 0.5),
                "added_ms_per_round_p99": support::percentile(&m.added_ms, 0.99),
                "run_ms_p50": support::percentile(&m.run_ms, 0.5),
                "run_ms_p99": support::percentile(&m.run_ms, 0.99),
                "cpu_ms_per_run": m.cpu * 1000.0 / m.runs as f64,
                "peak_rss_mb": m.peak_kb as f64 / 1024.0,
            }));
        }
        rows.push(row(level, &kiln, &floor));
        assert_eq!(kiln.errors + floor.errors, 0, "runs failed (see above)");
    }
    let _ = mock_child.kill();
    let _ = mock_child.wait();
    if measuring {
        support::table(
            &format!(
                "`kiln serve` (run log on) against a bare proxy on the same HTTP stack, {rounds} \
                 model rounds a run against `kiln mock` (kiln / floor; 4 passes a row, alternating, \
                 a fresh server each)"
            ),
            &[
                "concurrent runs",
                "runs",
                "runs/s kiln / floor",
                "throughput vs floor",
                "added ms per round p50",
                "added ms per round p99",
                "run ms p50",
                "run ms p99",
                "server CPU per run",
                "peak RSS",
            ],
            &rows,
        );
    }
    println!("\nserve_load: {}", Value::Array(summary));
}

fn row(level: usize, kiln: &Measured, floor: &Measured) -> Vec<String> {
    let rate = |m: &Measured| m.runs as f64 / m.wall;
    let pair = |a: f64, b: f64| format!("{a:.2} / {b:.2}");
    let p = |m: &Measured, q| support::percentile(&m.added_ms, q);
    let run = |m: &Measured, q| support::percentile(&m.run_ms, q);
    vec![
        level.to_string(),
        (kiln.runs + floor.runs).to_string(),
        format!("{:.0} / {:.0}", rate(kiln), rate(floor)),
        format!("{:.2}x", rate(kiln) / rate(floor)),
        pair(p(kiln, 0.5), p(floor, 0.5)),
        pair(p(kiln, 0.99), p(floor, 0.99)),
        pair(run(kiln, 0.5), run(floor, 0.5)),
        pair(run(kiln, 0.99), run(floor, 0.99)),
        format!(
            "{:.2} / {:.2} ms",
            kiln.cpu * 1000.0 / kiln.runs as f64,
            floor.cpu * 1000.0 / floor.runs as f64
        ),
        format!(
            "{:.0} / {:.0} MB",
            kiln.peak_kb as f64 / 1024.0,
            floor.peak_kb as f64 / 1024.0
        ),
    ]
}

/// One pass: a fresh server, `runs` runs with `level` in flight at a time, into `into`.
#[allow(clippy::too_many_arguments)]
async fn one_pass(
    server: Server,
    client: &reqwest::Client,
    mock: &str,
    scripts: &Path,
    db: &Path,
    level: usize,
    runs: usize,
    rounds: usize,
    into: &mut Measured,
) {
    let cmd = match server {
        Server::Kiln => {
            let bin = var("KILN_SERVE_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_kiln").into());
            let mut cmd = Command::new(bin);
            let n = level.to_string();
            cmd.args(["serve", "--bind", "127.0.0.1:0", "--no-stdlib", "--scripts"])
                .arg(scripts)
                .arg("--db")
                .arg(db)
                .args(["--max-runs", &n, "--queue", &n, "--run-timeout", "0"])
                .args(["--max-connections", "4096"]);
            cmd
        }
        Server::Floor => {
            let mut cmd = Command::new(std::env::current_exe().expect("this bench's binary"));
            cmd.env(bare_proxy::ENV, mock);
            cmd
        }
    };
    let (mut child, base) = support::start_server(cmd);
    let url = Arc::new(format!("{base}/v1/chat/completions"));
    // Warm the connections and the server's first run up.
    for i in 0..level.min(50) {
        let _ = one_run(client, &url, server, i).await;
    }
    let cpu_before = cpu_secs(child.id());
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers: Vec<_> = (0..level)
        .map(|_| {
            let (client, url, next) = (client.clone(), url.clone(), next.clone());
            tokio::spawn(async move {
                let mut done = Vec::new();
                while next.fetch_add(1, Ordering::Relaxed) < runs {
                    done.push(one_run(&client, &url, server, 0).await);
                }
                done
            })
        })
        .collect();
    let mut done = Vec::new();
    for w in workers {
        done.extend(w.await.expect("client task"));
    }
    into.wall += began.elapsed().as_secs_f64();
    into.cpu += cpu_secs(child.id()) - cpu_before;
    into.peak_kb = into.peak_kb.max(support::proc_status(child.id(), "VmHWM:"));
    let _ = child.kill();
    let _ = child.wait();

    let conn = (server == Server::Kiln).then(|| rusqlite::Connection::open(db).expect("run log"));
    for (answer, took) in done {
        let model_ms = match (answer, &conn) {
            (Some(Answer::Kiln(id)), Some(conn)) => model_ms_of(conn, &id, rounds),
            (Some(Answer::Floor(ms)), None) => ms,
            _ => {
                into.errors += 1;
                continue;
            }
        };
        into.runs += 1;
        into.added_ms
            .push((took.as_secs_f64() * 1000.0 - model_ms) / rounds as f64);
        into.run_ms.push(took.as_secs_f64() * 1000.0);
    }
    into.added_ms.sort_by(f64::total_cmp);
    into.run_ms.sort_by(f64::total_cmp);
}

/// What a run answered that tells its model requests' time.
enum Answer {
    /// kiln's run id: the run log has the times.
    Kiln(String),
    /// The proxy's own sum, in ms.
    Floor(f64),
}

/// One Chat Completions request: what it answered (when it answered as expected) and how long
/// it took.
async fn one_run(
    client: &reqwest::Client,
    url: &str,
    server: Server,
    i: usize,
) -> (Option<Answer>, Duration) {
    let start = Instant::now();
    let request =
        json!({"model": "load", "messages": [{"role": "user", "content": format!("go {i}")}]});
    let body = support::post_json(client, url, &request).await;
    let answer = body
        .filter(|b| b["choices"][0]["message"]["content"] == "All done.")
        .and_then(|b| match server {
            Server::Kiln => b["kiln"]["run_id"]
                .as_str()
                .map(|id| Answer::Kiln(id.into())),
            Server::Floor => b["bare"]["model_ms"].as_f64().map(Answer::Floor),
        });
    (answer, start.elapsed())
}

/// The time a kiln run's model requests took, from its run log (ms).
fn model_ms_of(conn: &rusqlite::Connection, id: &str, rounds: usize) -> f64 {
    let (ms, count) = support::model_ms_of(conn, id);
    assert_eq!(count, rounds, "run {id} made {count} model requests");
    ms
}
