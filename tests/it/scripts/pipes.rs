//! The real binary writing into a pipe whose reader is gone (`kiln logs | head`): a normal end,
//! exit 0, no panic.

use crate::common::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs kiln with stdout a pipe whose read end is closed before kiln starts, so its first
/// write fails with EPIPE.
fn into_closed_pipe(args: &[&str], cwd: &Path, stdin: Stdio) -> Output {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut child = Command::new(kiln_bin())
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .env_remove("KILN_LOG")
        .stdin(stdin)
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn kiln");
    // A safety net: `watch` must end by itself once its output is gone.
    let end = Instant::now() + Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            panic!("kiln {args:?} kept running after its stdout closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn assert_quiet_end(args: &[&str], cwd: &Path, stdin: Stdio) {
    let out = into_closed_pipe(args, cwd, stdin);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "kiln {args:?}: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe") && !err.contains("error"),
        "kiln {args:?} said: {err}"
    );
}

#[test]
fn every_printing_command_ends_quietly_when_its_reader_is_gone() {
    let s = Scripts::new(&[(
        "t.rhai",
        "tool(\"t\").param(\"x\", \"integer\").handler(|a| a.x);",
    )]);
    let demo = repo().join("examples/demo").display().to_string();
    let ran = kiln(
        &["ask", "demo", "What is 10% of 50?", "--scripts", &demo],
        s.path(),
    );
    assert!(ran.status.success(), "{}", stderr(&ran));
    for args in [
        &["logs"][..],
        &["logs", "--json"],
        &["sessions", "list"],
        &["tools", "--scripts", "."],
        &["tools", "--json", "--scripts", "."],
        &["schema", "t", "--scripts", "."],
        &["check", "--scripts", "."],
        &["agents", "--scripts", &demo],
        &["call", "t", r#"{"x": 2}"#, "--scripts", "."],
        &["ask", "demo", "What is 10% of 50?", "--scripts", &demo],
        &[
            "ask",
            "demo",
            "What is 10% of 50?",
            "--json",
            "--scripts",
            &demo,
        ],
        &["definitions", "-o", "kiln-defs.txt"],
        &["watch", "--scripts", "."],
        &["test", &demo],
        &["test", "--json", &demo],
        &["init", "fresh"],
        &["--help"],
    ] {
        assert_quiet_end(args, s.path(), Stdio::null());
    }
    // `kiln extract` and a piped `kiln repl` read stdin.
    let stdin = |text: &str| {
        let path = s.path().join("stdin.txt");
        std::fs::write(&path, text).expect("write");
        Stdio::from(std::fs::File::open(&path).expect("open"))
    };
    let call = r#"{"tool": "t", "parameters": {"x": 1}}"#;
    assert_quiet_end(&["extract", "--scripts", "."], s.path(), stdin(call));
    assert_quiet_end(
        &["repl", "--scripts", "."],
        s.path(),
        stdin(":tools\n:call t {\"x\": 3}\n"),
    );

    // The runs made while nobody read the answer are logged as finished, not left running.
    let logs = kiln(&["logs", "--json"], s.path());
    let runs: serde_json::Value = serde_json::from_str(&stdout(&logs)).expect("logs json");
    let runs = runs.as_array().expect("runs");
    let asks: Vec<&str> = runs
        .iter()
        .filter(|r| r["agent"] == "demo")
        .filter_map(|r| r["status"].as_str())
        .collect();
    assert_eq!(asks, ["ok", "ok", "ok"], "{runs:#?}");
    // The direct calls (`kiln call`, the REPL's :call) are logged as finished too.
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:#?}");
}
