//! Runs that wait: 10,000 concurrent `kiln serve` runs whose model takes 2 s a reply, against
//! the bare proxy (`support/bare_proxy.rs`: the same HTTP stack and client, the same round
//! trips, no tools, validation or log) as the floor, in the same run.
//!
//! The model is a slow fake in a process of its own (this bench binary again): it answers
//! OpenAI Chat Completions with a tool call, then the answer, each after the delay. The client
//! (this process) starts the runs in steps over less than one run's length, so all of them wait
//! at once; while they do, the server's resident memory and open file descriptors are read from
//! /proc. Reported: memory per waiting run ((RSS with every run waiting - RSS idle) / runs),
//! file descriptors, the added latency of a run (the client's time less the time its model
//! requests took, from kiln's run log or the proxy's own count), p50 and p99, and errors.
//!
//! Two ways to wait: held (each run is an open `POST /v1/chat/completions`, so kiln holds two
//! descriptors a run, its client's and the model's) and submitted (`POST /v1/runs` with
//! `"wait": false`: one descriptor a run, the model's; the added latency then comes from kiln's
//! run log, each run's end less its start less its model requests). The bench raises its file
//! limit (and so its children's) to what the load needs; where the hard limit cannot be raised
//! (that needs CAP_SYS_RESOURCE), a mode runs as many runs as fit and says so.
//!
//! The same runs then wait on the same fake served over TLS (a test certificate kiln trusts
//! through `SSL_CERT_FILE`): over HTTP/1.1 (`--http1`), one connection a run to the model, and
//! over HTTP/2, where the runs share a connection per 100 of them.
//!
//! `cargo bench --bench waiting`; under `cargo test` a smoke run (20 runs, 50 ms replies).
//! `KILN_WAIT_RUNS`, `KILN_WAIT_DELAY_MS` and `KILN_WAIT_ROUNDS` override the sizes.

#[path = "support/bare_proxy.rs"]
mod bare_proxy;
mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Set in the slow fake's process: its delay in milliseconds.
const SLOW_FAKE: &str = "KILN_WAIT_SLOW_FAKE";
/// Set in the slow fake's process to serve TLS: `CERT_PEM_PATH:KEY_PEM_PATH`.
const SLOW_FAKE_TLS: &str = "KILN_WAIT_SLOW_FAKE_TLS";

fn var<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok()?.parse().ok()
}

/// The sizes of one measurement.
#[derive(Clone, Copy)]
struct Load {
    runs: usize,
    delay: Duration,
    rounds: usize,
}

fn main() {
    if let Ok(mock) = std::env::var(bare_proxy::ENV) {
        bare_proxy::run(&mock);
        return;
    }
    if let Some(ms) = var::<u64>(SLOW_FAKE) {
        slow_fake(Duration::from_millis(ms));
        return;
    }
    let measuring = support::measuring();
    let load = Load {
        runs: var("KILN_WAIT_RUNS").unwrap_or(if measuring { 10_000 } else { 20 }),
        delay: Duration::from_millis(var("KILN_WAIT_DELAY_MS").unwrap_or(if measuring {
            2000
        } else {
            50
        })),
        rounds: var("KILN_WAIT_ROUNDS").unwrap_or(5).max(1),
    };
    // Held: two descriptors a run in kiln; headroom for the pool's turnover between rounds.
    let limit = raise_file_limit(2 * load.runs as u64 + 2048);
    if (limit.saturating_sub(2048) / 2) < load.runs as u64 {
        eprintln!(
            "waiting: the file limit is {limit} and could not be raised (a hard limit needs \
             CAP_SYS_RESOURCE): fewer held runs than {}",
            load.runs
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(measure(load, limit, measuring));
}

/// Raises this process's open-file limit (its children inherit it) to `want`, the hard limit
/// too where allowed; the soft limit it got.
fn raise_file_limit(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur >= want {
            return lim.rlim_cur;
        }
        let raised = libc::rlimit {
            rlim_cur: want.max(lim.rlim_cur),
            rlim_max: want.max(lim.rlim_max),
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
            return want;
        }
        lim.rlim_cur = lim.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
            return lim.rlim_max;
        }
        lim.rlim_cur
    }
}

/// In the slow fake's process: serves OpenAI Chat Completions on loopback until killed,
/// answering each request after `delay` with a `step` call, or the answer in the last round.
fn slow_fake(delay: Duration) {
    use axum::body::Bytes;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let rounds: usize = var("KILN_WAIT_ROUNDS").unwrap_or(5).max(1);
        let app = axum::Router::new().route(
            "/v1/chat/completions",
            axum::routing::post(move |body: Bytes| async move {
                tokio::time::sleep(delay).await;
                reply(&body, rounds)
            }),
        );
        if let Ok(files) = std::env::var(SLOW_FAKE_TLS) {
            let (cert, key) = files.split_once(':').expect("CERT:KEY");
            let options = kiln_mock::ServeOptions {
                tls: Some((cert.into(), key.into())),
                http1_only: false,
            };
            let any = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
            let (addr, serving) = kiln_mock::bind_with(app, any, options).await.expect("bind");
            println!("slow fake listening on https://{addr}");
            return serving.await.expect("serve");
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        println!(
            "slow fake listening on http://{}",
            listener.local_addr().expect("addr")
        );
        let limits = kiln_http::HttpLimits {
            max_connections: 1 << 20,
            ..kiln_http::HttpLimits::default()
        };
        let stop = tokio_util::sync::CancellationToken::new();
        kiln_http::serve(listener, app, limits, stop)
            .await
            .expect("serve");
    });
}

/// The reply to a request that holds `n` earlier assistant turns: a call, or the answer; as
/// server-sent events when the request asks to stream (`POST /v1/runs` always does).
fn reply(body: &[u8], rounds: usize) -> axum::response::Response {
    use axum::response::IntoResponse;
    let request: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let done = request["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
    let call = done + 1 < rounds;
    let message = if call {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": format!("call_{done}"), "type": "function",
            "function": {"name": "step", "arguments": format!("{{\"n\":{done}}}")}}]})
    } else {
        json!({"role": "assistant", "content": "All done."})
    };
    let finish = if call { "tool_calls" } else { "stop" };
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    if request["stream"] != true {
        return axum::Json(json!({"id": "chatcmpl-wait", "object": "chat.completion",
            "created": 0, "model": "m", "usage": usage,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}))
        .into_response();
    }
    let mut delta = message;
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        calls[0]["index"] = json!(0);
    }
    let chunk = |choice: Value, usage: Value| {
        json!({"id": "chatcmpl-wait", "object": "chat.completion.chunk", "created": 0,
               "model": "m", "choices": [choice], "usage": usage})
    };
    let events = [
        chunk(
            json!({"index": 0, "delta": delta, "finish_reason": null}),
            Value::Null,
        ),
        chunk(
            json!({"index": 0, "delta": {}, "finish_reason": finish}),
            usage,
        ),
    ];
    let mut text = String::new();
    for e in events {
        text.push_str(&format!("data: {e}\n\n"));
    }
    text.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], text).into_response()
}

#[derive(Clone, Copy, PartialEq)]
enum Server {
    /// `kiln serve`, each run a held chat completion.
    Kiln,
    /// `kiln serve`, each run submitted with `"wait": false`.
    KilnSubmitted,
    /// The bare proxy, each run a held chat completion.
    Floor,
}

impl Server {
    /// How many runs fit the file limit: two descriptors a held run, one a submitted one.
    fn fit(self, runs: usize, limit: u64) -> usize {
        let per_run = if self == Server::KilnSubmitted { 1 } else { 2 };
        runs.min((limit.saturating_sub(2048) / per_run) as usize)
            .max(1)
    }
}

/// What one pass measured.
#[derive(Default)]
struct Measured {
    /// Runs started at once.
    started: usize,
    runs: usize,
    errors: usize,
    idle_kb: u64,
    waiting_kb: u64,
    fds_idle: usize,
    fds_waiting: usize,
    /// The most threads the server had.
    threads: u64,
    added_ms: Vec<f64>,
    wall: f64,
    cpu: f64,
}

async fn measure(load: Load, limit: u64, measuring: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).expect("scripts folder");
    let mut fake = Command::new(std::env::current_exe().expect("this bench"));
    fake.env(SLOW_FAKE, load.delay.as_millis().to_string())
        .env("KILN_WAIT_ROUNDS", load.rounds.to_string());
    let (mut fake_child, fake_url) = support::start_server(fake);
    support::write_step_agent(&scripts, "wait", &fake_url, load.rounds);
    // The same fake over TLS, and the scripts reaching it.
    let certs = support::certs::TestCertificates::new(dir.path());
    let mut tls_fake = Command::new(std::env::current_exe().expect("this bench"));
    tls_fake
        .env(SLOW_FAKE, load.delay.as_millis().to_string())
        .env("KILN_WAIT_ROUNDS", load.rounds.to_string())
        .env(
            SLOW_FAKE_TLS,
            format!("{}:{}", certs.cert.display(), certs.key.display()),
        );
    let (mut tls_fake_child, tls_fake_url) = support::start_server(tls_fake);
    let tls_scripts = dir.path().join("tls-scripts");
    std::fs::create_dir(&tls_scripts).expect("scripts folder");
    support::write_step_agent(&tls_scripts, "wait", &tls_fake_url, load.rounds);
    let client = kiln::egress::http_client_builder()
        .timeout(Duration::from_secs(600))
        .pool_max_idle_per_host(load.runs)
        .build()
        .expect("client");
    let mut passes = Vec::new();
    let plain = (fake_url.as_str(), scripts.as_path());
    let tls = (tls_fake_url.as_str(), tls_scripts.as_path());
    for (name, server, (fake, scripts), http) in [
        ("kiln serve, held", Server::Kiln, plain, Http::Plain),
        ("bare proxy, held", Server::Floor, plain, Http::Plain),
        (
            "kiln serve, submitted",
            Server::KilnSubmitted,
            plain,
            Http::Plain,
        ),
        (
            "kiln serve, submitted, TLS, HTTP/1.1",
            Server::KilnSubmitted,
            tls,
            Http::Http1,
        ),
        (
            "kiln serve, submitted, TLS, HTTP/2",
            Server::KilnSubmitted,
            tls,
            Http::Http2,
        ),
        (
            "kiln serve, held, TLS, HTTP/2",
            Server::Kiln,
            tls,
            Http::Http2,
        ),
    ] {
        let runs = server.fit(load.runs, limit);
        let db = dir.path().join(format!("wait-{}.db", passes.len()));
        let pass = Pass {
            server,
            client: &client,
            fake,
            scripts,
            db: &db,
            http,
            ca: &certs.ca,
        };
        passes.push((name, one_pass(&pass, Load { runs, ..load }).await));
    }
    let _ = tls_fake_child.kill();
    let _ = tls_fake_child.wait();
    let _ = fake_child.kill();
    let _ = fake_child.wait();
    let rows: Vec<Vec<String>> = passes.iter().map(|(name, m)| row(name, m)).collect();
    if measuring {
        support::table(
            &format!(
                "Up to {} concurrent runs waiting on a model that takes {} ms a reply ({} rounds \
                 a run: a tool call a round, then the answer), `kiln serve` (run log on) against \
                 the bare proxy, one pass each",
                load.runs,
                load.delay.as_millis(),
                load.rounds
            ),
            &[
                "server, runs",
                "concurrent runs",
                "runs ok / errors",
                "RSS idle",
                "RSS with all waiting",
                "memory per waiting run",
                "open fds idle / waiting",
                "threads",
                "added latency p50",
                "added latency p99",
                "server CPU per run",
            ],
            &rows,
        );
    }
    let summary: Vec<Value> = passes
        .iter()
        .map(|(name, m)| {
            json!({"pass": name, "runs": m.started, "kb_per_run": per_run_kb(m),
                   "errors": m.errors, "added_ms_p99": support::percentile(&m.added_ms, 0.99)})
        })
        .collect();
    println!("\nwaiting: {}", Value::Array(summary));
    let errors: usize = passes.iter().map(|(_, m)| m.errors).sum();
    assert_eq!(errors, 0, "runs failed (see above)");
}

fn per_run_kb(m: &Measured) -> f64 {
    m.waiting_kb.saturating_sub(m.idle_kb) as f64 / m.started.max(1) as f64
}

fn row(name: &str, m: &Measured) -> Vec<String> {
    vec![
        name.to_string(),
        m.started.to_string(),
        format!("{} / {}", m.runs, m.errors),
        format!("{:.1} MB", m.idle_kb as f64 / 1024.0),
        format!("{:.1} MB", m.waiting_kb as f64 / 1024.0),
        format!("{:.1} KB", per_run_kb(m)),
        format!("{} / {}", m.fds_idle, m.fds_waiting),
        m.threads.to_string(),
        format!("{:.1} ms", support::percentile(&m.added_ms, 0.5)),
        format!("{:.1} ms", support::percentile(&m.added_ms, 0.99)),
        format!("{:.2} ms", m.cpu * 1000.0 / m.runs.max(1) as f64),
    ]
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// How kiln reaches the model in a pass.
#[derive(Clone, Copy, PartialEq)]
enum Http {
    /// Plain `http://`: HTTP/1.1.
    Plain,
    /// TLS, `--http1`.
    Http1,
    /// TLS, HTTP/2 (kiln's default where the server serves it).
    Http2,
}

/// What one pass runs against.
struct Pass<'a> {
    server: Server,
    client: &'a reqwest::Client,
    fake: &'a str,
    scripts: &'a Path,
    db: &'a Path,
    http: Http,
    /// The test CA kiln trusts for the TLS fake.
    ca: &'a Path,
}

/// The server of one pass, started.
fn start(pass: &Pass, runs: usize) -> (std::process::Child, String) {
    let cmd = match pass.server {
        Server::Kiln | Server::KilnSubmitted => {
            let mut cmd = support::kiln_serve(pass.scripts);
            let n = runs.to_string();
            cmd.arg("--db")
                .arg(pass.db)
                .args(["--max-runs", &n, "--queue", &n, "--run-timeout", "0"])
                .args(["--max-connections", &(runs + 64).to_string()])
                .env("SSL_CERT_FILE", pass.ca);
            if pass.http == Http::Http1 {
                cmd.arg("--http1");
            }
            cmd
        }
        Server::Floor => {
            let mut cmd = Command::new(std::env::current_exe().expect("this bench"));
            cmd.env(bare_proxy::ENV, pass.fake);
            cmd
        }
    };
    support::start_server(cmd)
}

/// One pass: a fresh server; a few runs to warm it, then `load.runs` at once.
async fn one_pass(pass: &Pass<'_>, load: Load) -> Measured {
    let (mut child, base) = start(pass, load.runs);
    let pid = child.id();
    let server = pass.server;
    let url = Arc::new(match server {
        Server::KilnSubmitted => format!("{base}/v1/runs"),
        _ => format!("{base}/v1/chat/completions"),
    });
    for i in 0..4 {
        let _ = one_run(pass.client, &url, server, i).await;
    }
    let mut m = Measured {
        started: load.runs,
        idle_kb: support::proc_status(pid, "VmRSS:"),
        fds_idle: open_fds(pid),
        ..Measured::default()
    };
    let cpu_before = support::cpu_time_of(pid);
    let began = Instant::now();
    // Started in steps of 50 over 60% of one run's length (a bounded rate: a burst past the
    // listen backlog would measure SYN retries), so every run is waiting at once after that.
    let run_len = load.delay * load.rounds as u32;
    let per_step = 50;
    let steps = load.runs.div_ceil(per_step).max(1);
    let mut tasks = Vec::with_capacity(load.runs);
    for i in 0..load.runs {
        if i > 0 && i % per_step == 0 {
            tokio::time::sleep(run_len * 3 / 5 / steps as u32).await;
        }
        let (client, url) = (pass.client.clone(), url.clone());
        tasks.push(tokio::spawn(async move {
            one_run(&client, &url, server, i).await
        }));
    }
    // Every run started; the last ones are waiting for their first reply. Read the server
    // while they all wait (before the first run can end).
    let reads_until = began + run_len * 9 / 10;
    while Instant::now() < reads_until {
        m.waiting_kb = m.waiting_kb.max(support::proc_status(pid, "VmRSS:"));
        m.fds_waiting = m.fds_waiting.max(open_fds(pid));
        m.threads = m.threads.max(support::proc_status(pid, "Threads:"));
        tokio::time::sleep(load.delay / 20).await;
    }
    let mut done = Vec::with_capacity(load.runs);
    for t in tasks {
        done.push(t.await.expect("client task"));
    }
    let conn =
        (server != Server::Floor).then(|| rusqlite::Connection::open(pass.db).expect("run log"));
    if let (Some(conn), Server::KilnSubmitted) = (&conn, server) {
        wait_for_ends(conn, load.runs + 4, run_len * 10);
    }
    m.wall = began.elapsed().as_secs_f64();
    m.cpu = (support::cpu_time_of(pid) - cpu_before).as_secs_f64();
    let _ = child.kill();
    let _ = child.wait();
    for (answer, took) in done {
        let added = match (answer, &conn) {
            (Some(Answer::Kiln(id)), Some(conn)) => {
                Some(took.as_secs_f64() * 1000.0 - support::model_ms_of(conn, &id).0)
            }
            (Some(Answer::Submitted(id)), Some(conn)) => logged_added_ms(conn, &id),
            (Some(Answer::Floor(ms)), None) => Some(took.as_secs_f64() * 1000.0 - ms),
            _ => None,
        };
        match added {
            Some(ms) => {
                m.runs += 1;
                m.added_ms.push(ms);
            }
            None => m.errors += 1,
        }
    }
    m.added_ms.sort_by(f64::total_cmp);
    m
}

/// Waits until the run log holds `runs` ended runs (or `limit` has passed).
fn wait_for_ends(conn: &rusqlite::Connection, runs: usize, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let ended: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM runs WHERE ended_at IS NOT NULL",
                [],
                |r| r.get(0),
            )
            .unwrap_or(0);
        if ended as usize >= runs {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A submitted run's added latency from the run log: its end less its start less its model
/// requests (ms); `None` when it did not end well.
fn logged_added_ms(conn: &rusqlite::Connection, id: &str) -> Option<f64> {
    let (status, started, ended): (String, f64, Option<f64>) = conn
        .query_row(
            "SELECT status, started_at, ended_at FROM runs WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .ok()?;
    if status != "ok" {
        eprintln!("run {id}: {status}");
        return None;
    }
    Some((ended? - started) * 1000.0 - support::model_ms_of(conn, id).0)
}

/// What a run answered that tells its model requests' time.
enum Answer {
    /// kiln's run id: the run log has the times.
    Kiln(String),
    /// A submitted run's id: the run log has its start, end and model requests.
    Submitted(String),
    /// The proxy's own sum, in ms.
    Floor(f64),
}

async fn one_run(
    client: &reqwest::Client,
    url: &str,
    server: Server,
    i: usize,
) -> (Option<Answer>, Duration) {
    let start = Instant::now();
    let body = match server {
        Server::KilnSubmitted => {
            json!({"agent": "wait", "input": format!("go {i}"), "wait": false, "stream": false})
        }
        _ => json!({"model": "wait", "messages": [{"role": "user", "content": format!("go {i}")}]}),
    };
    let body = support::post_json(client, url, &body).await;
    let answer = body.and_then(|b| match server {
        Server::KilnSubmitted => b["id"].as_str().map(|id| Answer::Submitted(id.into())),
        _ if b["choices"][0]["message"]["content"] != "All done." => None,
        Server::Kiln => b["kiln"]["run_id"]
            .as_str()
            .map(|id| Answer::Kiln(id.into())),
        Server::Floor => b["bare"]["model_ms"].as_f64().map(Answer::Floor),
    });
    (answer, start.elapsed())
}
