//! The official A2A SDKs as clients of `kiln serve`: `a2a-sdk` (PyPI) sends, streams and
//! answers a task's `input-required`; `@a2a-js/sdk` (npm) sends and streams. The clients are
//! tests/peers/a2a/client.py and client.mjs, each printing one JSON line per step.
//!
//! `#[ignore]`d: they need the SDKs, which `.ci/run` installs (the Python one with pip, the
//! JavaScript one under `KILN_A2A_JS`, an npm prefix).

use super::A2a;
use crate::common::*;
use serde_json::Value;
use std::process::Command;

/// Runs a client with `base`; its steps, after checking it exited 0.
fn steps(mut cmd: Command, base: &str) -> Vec<Value> {
    let out = cmd.arg(base).output().expect("run the client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn names(steps: &[Value]) -> Vec<&str> {
    steps
        .iter()
        .filter(|s| s["ok"] == true)
        .filter_map(|s| s["step"].as_str())
        .collect()
}

#[test]
#[ignore = "needs the a2a-sdk Python package (run by .ci/run)"]
fn a2a_python_sdk_sends_streams_and_answers_input_required() {
    let a = A2a::start(&["--a2a-wait", "10"], &[]);
    let mut cmd = Command::new("python3");
    cmd.arg(repo().join("tests/peers/a2a/client.py"));
    let done = steps(cmd, &a.base);
    let ok = names(&done);
    for step in ["send", "stream", "approval"] {
        assert!(ok.contains(&step), "step {step} missing from {done:?}");
    }
}

#[test]
#[ignore = "needs @a2a-js/sdk under KILN_A2A_JS (run by .ci/run)"]
fn a2a_javascript_sdk_sends_and_streams() {
    let prefix =
        std::env::var("KILN_A2A_JS").expect("KILN_A2A_JS: the npm prefix holding @a2a-js/sdk");
    let a = A2a::start(&["--a2a-wait", "10"], &[]);
    let mut cmd = Command::new("node");
    cmd.arg(repo().join("tests/peers/a2a/client.mjs"))
        .env("A2A_JS_PREFIX", &prefix);
    let done = steps(cmd, &a.base);
    let ok = names(&done);
    for step in ["send", "stream"] {
        assert!(ok.contains(&step), "step {step} missing from {done:?}");
    }
}
