//! The benches written in Python run, once each, as smoke tests: a bench that no longer runs is
//! found here, not when the tables are next regenerated.

use crate::common::kiln_bin;
use std::process::Command;

/// benches/peers/slow_server.py: its independent provider answers every wire kiln ask speaks, from
/// a fast and a slow server, and the bare loop runs against it.
#[test]
fn slow_server_bench_runs_against_every_wire() {
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/peers/slow_server.py"
        ))
        .arg(kiln_bin())
        .args(["--smoke", "--delays", "0,5"])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "| openai | kiln ask | kiln mock |",
        "| anthropic | kiln ask | independent, 5 ms |",
        "| ollama | kiln ask | independent, 0 ms |",
        "| openai | bare Python loop (http.client) | independent, 5 ms |",
    ] {
        assert!(text.contains(row), "no row {row:?} in:\n{text}");
    }
}
