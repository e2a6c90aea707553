//! The run log as an operator meets it: a run's provider and model are there from its start,
//! a run whose process was killed shows as `interrupted` (not `running` forever), and old
//! runs can be pruned while sessions stay.

use crate::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SLOW: &str = r#"
tool("wait").description("Takes a long time").handler(|args| { sleep(30); "done" });
agent("slow").provider("script").tools(["wait"])
    .planner(|m, t| if m[m.len() - 1].role == "user" { #{ tool_calls: [#{ name: "wait", args: #{} }] } } else { #{ text: "done" } });
agent("quick").provider("script").planner(|m, t| #{ text: "hi" });
"#;

fn logs(dir: &std::path::Path) -> Value {
    let out = kiln(&["logs", "--json", "--no-stdlib", "--scripts", "."], dir);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("logs json")
}

#[test]
fn a_killed_runs_log_shows_it_interrupted_with_its_provider_and_model() {
    let s = Scripts::new(&[("slow.rhai", SLOW)]);
    let mut child = Command::new(kiln_bin())
        .args(["ask", "slow", "go", "--no-stdlib", "--scripts", "."])
        .current_dir(s.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kiln ask");
    // Wait until the run is in the log (its first step committed), then kill -9.
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let runs = logs(s.path());
        if runs.as_array().is_some_and(|r| !r.is_empty()) || Instant::now() > end {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("kill");
    let _ = child.wait();
    let runs = logs(s.path());
    let run = &runs[0];
    assert_eq!(run["status"], "interrupted", "{run}");
    assert_eq!(run["provider"], "script", "{run}");
    let text = stdout(&kiln(&["logs", "--no-stdlib", "--scripts", "."], s.path()));
    assert!(text.contains("slow (script/"), "{text}");
    assert!(text.contains("interrupted"), "{text}");
}

#[test]
fn old_runs_are_pruned_and_sessions_stay() {
    let s = Scripts::new(&[("slow.rhai", SLOW)]);
    for _ in 0..3 {
        let out = kiln(
            &[
                "ask",
                "quick",
                "hello",
                "--session",
                "s1",
                "--no-stdlib",
                "--scripts",
                ".",
            ],
            s.path(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(logs(s.path()).as_array().map(Vec::len), Some(3));
    let kept = kiln(&["logs", "prune", "--older-than", "1h"], s.path());
    assert!(
        stdout(&kept).contains("forgot 0 run(s)"),
        "{}",
        stdout(&kept)
    );
    std::thread::sleep(Duration::from_millis(1100));
    let gone = kiln(&["logs", "prune", "--older-than", "1s"], s.path());
    assert!(
        stdout(&gone).contains("forgot 3 run(s) that ended more than 1s ago"),
        "{}{}",
        stdout(&gone),
        stderr(&gone)
    );
    assert_eq!(logs(s.path()).as_array().map(Vec::len), Some(0));
    let sessions = stdout(&kiln(&["sessions"], s.path()));
    assert!(sessions.contains("s1"), "{sessions}");
    let bad = kiln(&["logs", "prune"], s.path());
    assert!(
        stderr(&bad).contains("needs --older-than"),
        "{}",
        stderr(&bad)
    );
}

#[test]
fn kiln_serve_forgets_runs_past_its_log_retention() {
    let s = Scripts::new(&[("slow.rhai", SLOW)]);
    let out = kiln(
        &["ask", "quick", "hello", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    std::thread::sleep(Duration::from_millis(1100));
    let db = s.path().join(".kiln").join("kiln.db");
    assert!(db.exists(), "the default database");
    let _serve = crate::doors::serve::Serve::start(
        s.path(),
        &db,
        &["--no-stdlib", "--log-retention", "1s"],
        &[],
    );
    let end = Instant::now() + Duration::from_secs(10);
    while logs(s.path()).as_array().is_some_and(|r| !r.is_empty()) {
        assert!(Instant::now() < end, "the old run is still logged");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A run that ends while it serves is forgotten too: the check repeats every tenth of the
    // retention (a second at least), not only hourly.
    let out = kiln(
        &["ask", "quick", "again", "--no-stdlib", "--scripts", "."],
        s.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(logs(s.path()).as_array().map(Vec::len), Some(1));
    let end = Instant::now() + Duration::from_secs(10);
    while logs(s.path()).as_array().is_some_and(|r| !r.is_empty()) {
        assert!(
            Instant::now() < end,
            "the run that ended while serving is still logged"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_bad_duration_names_its_flag() {
    let s = Scripts::new(&[("slow.rhai", SLOW)]);
    let out = kiln(&["logs", "prune", "--older-than", "3w"], s.path());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--older-than \"3w\": unknown unit \"w\""),
        "{}",
        stderr(&out)
    );
}
