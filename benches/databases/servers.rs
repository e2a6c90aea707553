//! 100 concurrent runs through `kiln serve` on one PostgreSQL database: all sent to one server,
//! against the same runs spread over two servers (each run to the next server in turn), in one
//! bench run, alternating one, two, two, one. Each run is three model rounds against `kiln
//! mock` (a tool call in the first two), logged in the shared database. Reported: runs a
//! second (the client's wall time for all of them) and the servers' CPU per run (all server
//! processes together; the mock's and PostgreSQL's not counted).

use crate::support;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Concurrent runs at once.
const AT_ONCE: usize = 100;

/// What the passes of one layout measured together.
#[derive(Default)]
struct Measured {
    runs: usize,
    errors: usize,
    wall: f64,
    cpu: f64,
}

/// The table's rows: one server, two servers, with the ratio of two to one.
pub fn rows(url: &str, measuring: bool, runtime: &tokio::runtime::Runtime) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let scripts = dir.path().join("scripts");
    std::fs::create_dir(&scripts).expect("scripts folder");
    let turns = json!([
        {"tool_calls": [{"name": "step", "args": {"n": 1}}]},
        {"tool_calls": [{"name": "step", "args": {"n": 2}}]},
        {"text": "All done."}
    ]);
    let scenario = json!({"by_round": true, "record": false, "turns": turns});
    let (mut mock_child, mock) = support::start_mock(&scenario, dir.path());
    std::fs::write(
        scripts.join("load.rhai"),
        format!(
            r#"tool("step").description("One step").param("n", "int").handler(|a| #{{ n: a.n, ok: true }});
agent("load").provider("openai").model("m").base_url("{mock}/v1").tools(["step"]);"#
        ),
    )
    .expect("write script");
    let runs = if measuring { 1_000 } else { 8 };
    let (mut one, mut two) = (Measured::default(), Measured::default());
    for servers in [1, 2, 2, 1] {
        let into = if servers == 1 { &mut one } else { &mut two };
        runtime.block_on(one_pass(&scripts, url, servers, runs, into));
    }
    let _ = mock_child.kill();
    let _ = mock_child.wait();
    let show = |m: &Measured| {
        let per_s = m.runs as f64 / m.wall;
        let cpu_ms = m.cpu * 1000.0 / m.runs.max(1) as f64;
        (per_s, cpu_ms, m.errors)
    };
    let (a, b) = (show(&one), show(&two));
    vec![
        vec![
            "one kiln serve".into(),
            format!("{:.0} (1.00x)", a.0),
            format!("{:.2} ms (1.00x)", a.1),
            a.2.to_string(),
        ],
        vec![
            "two kiln serve, runs alternated".into(),
            format!("{:.0} ({:.2}x)", b.0, b.0 / a.0),
            format!("{:.2} ms ({:.2}x)", b.1, b.1 / a.1),
            b.2.to_string(),
        ],
    ]
}

/// Starts `servers` servers on the database at `url`, sends `runs` runs over them, `AT_ONCE`
/// at a time, and adds what it measured to `into`.
async fn one_pass(scripts: &Path, url: &str, servers: usize, runs: usize, into: &mut Measured) {
    let at_once = AT_ONCE.to_string();
    let started: Vec<_> = (0..servers)
        .map(|_| {
            let mut cmd = support::kiln_serve(scripts);
            cmd.args(["--db", url, "--max-runs", &at_once, "--queue", &at_once]);
            support::start_server(cmd)
        })
        .collect();
    let urls: Arc<Vec<String>> = Arc::new(
        started
            .iter()
            .map(|(_, base)| format!("{base}/v1/chat/completions"))
            .collect(),
    );
    let client = kiln::egress::http_client_builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("client");
    // Each server's first runs (connections, the pool) before the clock starts.
    for (i, url) in urls.iter().enumerate() {
        let _ = one_run(&client, url, i).await;
    }
    let cpu_before: f64 = started.iter().map(|(c, _)| cpu_of(c.id())).sum();
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers: Vec<_> = (0..AT_ONCE.min(runs))
        .map(|_| {
            let (client, urls, next) = (client.clone(), urls.clone(), next.clone());
            tokio::spawn(async move {
                let mut ok = 0usize;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= runs {
                        return ok;
                    }
                    ok += usize::from(one_run(&client, &urls[i % urls.len()], i).await);
                }
            })
        })
        .collect();
    let mut ok = 0;
    for w in workers {
        ok += w.await.unwrap_or(0);
    }
    into.wall += began.elapsed().as_secs_f64();
    into.cpu += started.iter().map(|(c, _)| cpu_of(c.id())).sum::<f64>() - cpu_before;
    into.runs += ok;
    into.errors += runs - ok;
    for (mut child, _) in started {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One run; whether it answered as the scenario ends.
async fn one_run(client: &reqwest::Client, url: &str, i: usize) -> bool {
    let request =
        json!({"model": "load", "messages": [{"role": "user", "content": format!("go {i}")}]});
    support::post_json(client, url, &request)
        .await
        .is_some_and(|b| b["choices"][0]["message"]["content"] == "All done.")
}

fn cpu_of(pid: u32) -> f64 {
    support::cpu_time_of(pid).as_secs_f64()
}
