//! The database's health across processes: a file damaged in the middle is refused when a
//! command starts (not found by a run midway), and processes sharing one file give their runs
//! ids that cannot collide.

use crate::common::*;
use crate::doors::serve::Serve;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{Seek as _, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const QUICK: &str = r#"
agent("quick").provider("script").planner(|m, t| #{ text: "hi" });
"#;

/// Fills `db` with runs through `kiln ask` until it spans many pages, then overwrites a page
/// in its middle (past the header) with garbage.
fn damage(dir: &Path, db: &Path) {
    let prompt = "x".repeat(20_000);
    for _ in 0..10 {
        let out = kiln(
            &[
                "ask",
                "quick",
                &prompt,
                "--no-stdlib",
                "--scripts",
                ".",
                "--db",
            ]
            .iter()
            .copied()
            .chain([db.to_str().expect("utf-8 path")])
            .collect::<Vec<_>>(),
            dir,
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let len = std::fs::metadata(db).expect("db size").len();
    assert!(len > 200_000, "many pages: {len}");
    // The first bytes of each page of the middle third: a b-tree page's header or an overflow
    // page's link (what `PRAGMA quick_check` walks; a page's content alone it does not read).
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(db)
        .expect("open the file");
    for page in (len / 3 / 4096)..(2 * len / 3 / 4096) {
        f.seek(std::io::SeekFrom::Start(page * 4096)).expect("seek");
        f.write_all(&[0xA5; 16]).expect("garbage");
    }
}

fn refused_at_start(args: &[&str], dir: &Path) -> String {
    let mut child = Command::new(kiln_bin())
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kiln");
    let end = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("kiln {args:?} started on a damaged file");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("output");
    assert!(
        !out.status.success(),
        "kiln {args:?} succeeded on a damaged file"
    );
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    stderr(&out)
}

#[test]
fn a_database_damaged_in_the_middle_is_refused_when_serve_and_ask_start() {
    let s = Scripts::new(&[("q.rhai", QUICK)]);
    let db = s.path().join("hurt.db");
    damage(s.path(), &db);
    let db_arg = db.to_str().expect("utf-8 path");
    let common = ["--no-stdlib", "--scripts", ".", "--db", db_arg];
    let serve = [&["serve", "--bind", "127.0.0.1:0"][..], &common[..]].concat();
    let ask = [&["ask", "quick", "hello"][..], &common[..]].concat();
    for args in [serve, ask] {
        let err = refused_at_start(&args, s.path());
        assert!(err.contains(db_arg) && err.contains("is damaged"), "{err}");
        assert!(err.contains("restore") && err.contains(".recover"), "{err}");
    }
}

/// Starts a run on `serve` and waits for its end: its id.
fn run_on(serve: &Serve) -> String {
    let (status, run) = post(
        &format!("{}/v1/runs", serve.url),
        &json!({"agent": "quick", "input": "hello"}),
        &[],
    );
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "completed", "{run}");
    run["id"].as_str().expect("run id").to_string()
}

/// An id's process tag: what is left when the clock (before) and the counter (the last four
/// hex digits) are taken away.
fn tag(id: &str) -> &str {
    &id[id.len() - 12..id.len() - 4]
}

#[test]
fn two_servers_sharing_a_database_give_runs_ids_tagged_by_process() {
    let s = Scripts::new(&[("q.rhai", QUICK)]);
    let db = s.path().join("shared.db");
    let a = Serve::start(s.path(), &db, &["--no-stdlib"], &[]);
    let b = Serve::start(s.path(), &db, &["--no-stdlib"], &[]);
    let ids_a = [run_on(&a), run_on(&a), run_on(&a)];
    let ids_b = [run_on(&b), run_on(&b), run_on(&b)];
    // Within a process the tag stays; across processes it differs, so two starts in the same
    // microsecond by two processes still get two ids.
    for ids in [&ids_a, &ids_b] {
        assert!(ids.iter().all(|id| tag(id) == tag(&ids[0])), "{ids:?}");
    }
    assert_ne!(tag(&ids_a[0]), tag(&ids_b[0]), "{ids_a:?} {ids_b:?}");
    let out = kiln(
        &["logs", "--json", "--no-stdlib", "--scripts", ".", "--db"]
            .iter()
            .copied()
            .chain([db.to_str().expect("utf-8 path")])
            .collect::<Vec<_>>(),
        s.path(),
    );
    let logged: Value = serde_json::from_str(&stdout(&out)).expect("logs json");
    let logged: BTreeSet<&str> = (logged.as_array().expect("runs").iter())
        .filter_map(|r| r["id"].as_str())
        .collect();
    let ours: BTreeSet<&str> = ids_a.iter().chain(&ids_b).map(String::as_str).collect();
    assert_eq!(logged, ours, "every run logged once, under its own id");
}
