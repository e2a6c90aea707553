//! Many stored sessions: listing, reading and deleting one with 100,000 sessions in the
//! database (four messages each: a question, a tool call, its result and the answer), against
//! the same with 100 sessions, measured in the same run. Through the real binary: `kiln
//! sessions` (list), `kiln sessions show` and `kiln sessions delete` as whole processes, and
//! `GET` / `DELETE /v1/sessions/{name}` on one `kiln serve` per database.
//!
//! The sessions are written straight into the database kiln created (its own schema), as many
//! runs would have left them. `cargo bench --bench sessions`; under `cargo test` a smoke run
//! (200 and 20 sessions). `KILN_SESSIONS` overrides the larger count.

mod support;

use rusqlite::params;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let measuring = support::measuring();
    let large: usize = std::env::var("KILN_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 100_000 } else { 200 });
    let small = if measuring { 100 } else { 20 };
    let (reads, cli_runs) = if measuring { (200, 5) } else { (5, 1) };
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut rows = Vec::new();
    let mut base: Option<Times> = None;
    for count in [small, large] {
        let db = dir.path().join(format!("s{count}.db"));
        let seeded = seed(&db, count);
        let times = runtime.block_on(measure(&db, count, reads, cli_runs));
        rows.push(row(count, seeded, &times, base.as_ref()));
        base.get_or_insert(times);
    }
    if measuring {
        support::table(
            &format!(
                "Stored sessions, four messages each: `kiln sessions` whole processes (median of \
                 {cli_runs}) and `kiln serve`'s session endpoints (median of {reads} requests; \
                 the ratio is against {small} sessions, this run)"
            ),
            &[
                "sessions",
                "database",
                "`kiln sessions` (list all)",
                "`kiln sessions show`",
                "`kiln sessions delete`",
                "GET /v1/sessions/{name}",
                "DELETE /v1/sessions/{name}",
            ],
            &rows,
        );
    }
}

/// What one database measured.
struct Times {
    list: Duration,
    show: Duration,
    delete: Duration,
    get: Duration,
    http_delete: Duration,
}

fn row(count: usize, bytes: u64, t: &Times, base: Option<&Times>) -> Vec<String> {
    let cell = |d: Duration, b: Option<Duration>| match b {
        Some(b) => format!("{} ({})", support::show(d), support::ratio(d, b)),
        None => support::show(d),
    };
    vec![
        count.to_string(),
        format!("{:.1} MB", bytes as f64 / 1e6),
        cell(t.list, base.map(|b| b.list)),
        cell(t.show, base.map(|b| b.show)),
        cell(t.delete, base.map(|b| b.delete)),
        cell(t.get, base.map(|b| b.get)),
        cell(t.http_delete, base.map(|b| b.http_delete)),
    ]
}

fn kiln(db: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln"));
    cmd.arg("--db").arg(db).env("KILN_LOG", "warn");
    cmd
}

/// Creates the database with kiln's schema and writes `count` sessions into it; its size.
fn seed(db: &Path, count: usize) -> u64 {
    let out = kiln(db).arg("sessions").output().expect("kiln sessions");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut conn = rusqlite::Connection::open(db).expect("open");
    let tx = conn.transaction().expect("tx");
    {
        let mut session = tx
            .prepare("INSERT INTO sessions(name, agent, state, created_at, updated_at) VALUES (?1, 'helper', '{\"turns\":2}', ?2, ?2)")
            .expect("insert session");
        let mut message = tx
            .prepare("INSERT INTO session_messages(session, seq, body) VALUES (?1, ?2, ?3)")
            .expect("insert message");
        for i in 0..count {
            let name = format!("s{i}");
            session
                .execute(params![name, 1.7e9 + i as f64])
                .expect("session");
            for (seq, body) in messages(i).iter().enumerate() {
                message
                    .execute(params![name, seq as i64, body])
                    .expect("message");
            }
        }
    }
    tx.commit().expect("commit");
    drop(conn);
    std::fs::metadata(db).map(|m| m.len()).unwrap_or(0)
}

/// The four messages of session `i`, as kiln stores them.
fn messages(i: usize) -> [String; 4] {
    [
        format!(r#"{{"role":"user","content":"What is {i} times 3?"}}"#),
        format!(
            r#"{{"role":"assistant","content":"","tool_calls":[{{"id":"call_{i}","name":"calculator","args":{{"expression":"{i} * 3"}}}}]}}"#
        ),
        format!(
            r#"{{"role":"tool","results":[{{"call_id":"call_{i}","name":"calculator","content":"{}","is_error":false}}]}}"#,
            i * 3
        ),
        format!(
            r#"{{"role":"assistant","content":"{i} times 3 is {}.","tool_calls":[]}}"#,
            i * 3
        ),
    ]
}

async fn measure(db: &Path, count: usize, reads: usize, cli_runs: usize) -> Times {
    let timed = |args: &[String], expect: &str| {
        let started = Instant::now();
        let out = kiln(db).args(args).output().expect("kiln sessions");
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(expect),
            "{args:?}: {text:.500}"
        );
        took
    };
    let mut list = Vec::new();
    let mut show = Vec::new();
    let mut delete = Vec::new();
    for k in 0..cli_runs {
        list.push(timed(&["sessions".into()], "s0 "));
        let name = format!("s{}", count / 2 + k);
        show.push(timed(
            &["sessions".into(), "show".into(), name],
            "times 3 is",
        ));
        let last = format!("s{}", count - 1 - k);
        delete.push(timed(
            &["sessions".into(), "delete".into(), last],
            "deleted",
        ));
    }
    let (get, http_delete) = over_http(db, count, reads, cli_runs).await;
    Times {
        list: support::median(&mut list),
        show: support::median(&mut show),
        delete: support::median(&mut delete),
        get,
        http_delete,
    }
}

/// Median times of reading and of deleting one session through `kiln serve` (open, loopback).
async fn over_http(db: &Path, count: usize, reads: usize, skip: usize) -> (Duration, Duration) {
    let scripts = db.with_extension("scripts");
    std::fs::create_dir_all(&scripts).expect("scripts");
    let mut cmd = support::kiln_serve(&scripts);
    cmd.arg("--db").arg(db).env("KILN_LOG", "warn");
    let (child, base) = support::start_server(cmd);
    // Killed however this ends (a failed assertion included), so no server outlives the bench.
    let _server = KillOnDrop(child);
    let client = kiln::egress::http_client_builder().build().expect("client");
    let mut get = Vec::new();
    let mut delete = Vec::new();
    // Sessions spread over the table, none deleted before (the CLI deleted the last `skip`).
    let names: Vec<String> = (0..reads)
        .map(|k| format!("s{}", k * 7919 % (count - skip - 1) + 1))
        .collect();
    let mut seen = std::collections::HashSet::new();
    for name in names.iter().filter(|n| seen.insert((*n).clone())) {
        let url = format!("{base}/v1/sessions/{name}");
        let started = Instant::now();
        let r = client.get(&url).send().await.expect("GET");
        let ok = r.status().is_success() && r.text().await.is_ok_and(|t| t.contains("times 3"));
        get.push(started.elapsed());
        assert!(ok, "GET {name}");
        let started = Instant::now();
        let r = client.delete(&url).send().await.expect("DELETE");
        delete.push(started.elapsed());
        assert_eq!(r.status().as_u16(), 204, "DELETE {name}");
    }
    (support::median(&mut get), support::median(&mut delete))
}

/// A child process killed when dropped.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
