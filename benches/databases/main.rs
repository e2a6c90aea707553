//! The two databases side by side in one run (issue 62, item 4): `store_set` + `store_get`
//! per call, and a run log step's commit (a model reply, a tool call and their messages, as
//! the recorder writes them) one at a time and from 100 runs at once, on an SQLite file
//! against a PostgreSQL database on 127.0.0.1. Latency is the wall time per operation; CPU is
//! this process's (kiln's side: the PostgreSQL server's own is not counted).
//!
//! Then 100 concurrent runs through `kiln serve` on PostgreSQL: one server against two
//! (servers.rs).
//!
//! `cargo bench --bench databases` with `KILN_POSTGRES` naming a server (`.ci/postgres
//! start`); without it the PostgreSQL rows are left out. Under `cargo test` a smoke run.

mod servers;
#[path = "../support/mod.rs"]
mod support;

use kiln_db::scratch::Scratch;
use kiln_db::{Db, Job, args};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let measuring = support::measuring();
    let (calls, steps, concurrent) = if measuring {
        (2_000, 1_000, 100)
    } else {
        (5, 5, 4)
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut engines: Vec<(&str, Arc<Db>, Option<Scratch>)> = vec![(
        "SQLite (WAL, synchronous=NORMAL)",
        Arc::new(Db::open(&dir.path().join("k.db")).expect("sqlite")),
        None,
    )];
    if std::env::var(kiln_db::scratch::SERVER_VAR).is_ok() {
        let scratch = Scratch::new().expect("a PostgreSQL database");
        let db = Arc::new(Db::connect(scratch.url()).expect("postgres"));
        engines.push(("PostgreSQL (127.0.0.1, its defaults)", db, Some(scratch)));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut rows = Vec::new();
    let mut base: Option<[Duration; 4]> = None;
    for (name, db, _scratch) in &engines {
        let store = measure(calls, || {
            db.kv_set("w", "bench", "k", &json!({"n": 1})).expect("set");
            db.kv_get("w", "bench", "k").expect("get");
        });
        let one = runtime.block_on(commit_one_at_a_time(db, steps));
        let many = runtime.block_on(commit_concurrently(db, steps, concurrent));
        let times = [store.0, one.0, one.1, many];
        let ratio = |i: usize| base.map_or("1.00x".into(), |b| support::ratio(times[i], b[i]));
        rows.push(vec![
            name.to_string(),
            format!("{} ({})", support::show(store.0), ratio(0)),
            support::show(store.1),
            format!("{} ({})", support::show(one.0), ratio(1)),
            format!("{} ({})", support::show(one.1), ratio(2)),
            format!("{} ({})", support::show(many), ratio(3)),
        ]);
        base.get_or_insert(times);
    }
    if measuring {
        support::table(
            &format!(
                "The databases, this run: store_set + store_get per call ({calls} calls), a run \
                 log step's commit one at a time ({steps}) and from {concurrent} runs at once \
                 (wall time per step); ratios against SQLite"
            ),
            &[
                "database",
                "store set+get",
                "its CPU",
                "step commit",
                "its CPU",
                "step, 100 at once",
            ],
            &rows,
        );
    }
    if std::env::var(kiln_db::scratch::SERVER_VAR).is_ok() {
        let scratch = Scratch::new().expect("a PostgreSQL database");
        let rows = servers::rows(scratch.url(), measuring, &runtime);
        if measuring {
            support::table(
                "100 runs at once through kiln serve on one PostgreSQL database (3 rounds each \
                 against kiln mock, 1,000 runs a layout, twice): one server against two, this run",
                &["servers", "runs a second", "servers' CPU a run", "errors"],
                &rows,
            );
        }
    }
}

/// Wall time and this process's CPU per call of `f`.
fn measure(n: usize, mut f: impl FnMut()) -> (Duration, Duration) {
    let (cpu, wall) = (support::cpu_time(), Instant::now());
    for _ in 0..n {
        f();
    }
    (
        wall.elapsed() / n as u32,
        (support::cpu_time() - cpu) / n as u32,
    )
}

/// A step as the recorder writes it: two messages with the reply on the assistant's, a tool
/// call, the session's state.
fn step(run: String, step: i64) -> Job {
    Box::new(move |w| {
        for part in 0..2i64 {
            w.exec(
                "INSERT INTO steps(run_id, step, part, kind, at, seq, role, body, round)
                 VALUES(?1, ?2, ?3, 'message', 1.0, ?4, 'assistant', ?5, 1)",
                &args![
                    &run,
                    step,
                    part,
                    step + part,
                    r#"{"role":"assistant","content":"a reply of some length"}"#
                ],
            )?;
        }
        w.exec(
            "INSERT INTO steps(run_id, step, part, kind, at, round, call_id, name, args, outcome, is_error, duration_ms)
             VALUES(?1, ?2, 2, 'tool', 1.0, 1, 'c1', 'lookup', '{\"sku\":\"A\"}', '{\"price\":4.5}', 0, 1.0)",
            &args![&run, step],
        )
    })
}

async fn commit_one_at_a_time(db: &Arc<Db>, steps: usize) -> (Duration, Duration) {
    let (cpu, wall) = (support::cpu_time(), Instant::now());
    for i in 0..steps {
        db.submit(step("solo".into(), i as i64 * 10))
            .await
            .expect("commit");
    }
    (
        wall.elapsed() / steps as u32,
        (support::cpu_time() - cpu) / steps as u32,
    )
}

async fn commit_concurrently(db: &Arc<Db>, steps: usize, runs: usize) -> Duration {
    let wall = Instant::now();
    let tasks: Vec<_> = (0..runs)
        .map(|r| {
            let db = db.clone();
            tokio::spawn(async move {
                for i in 0..steps / runs {
                    db.submit(step(format!("run{r}"), i as i64 * 10))
                        .await
                        .expect("commit");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    wall.elapsed() / (steps / runs * runs).max(1) as u32
}
