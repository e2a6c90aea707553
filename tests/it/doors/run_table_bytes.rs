//! `kiln serve` holds finished runs for `GET /v1/runs/{id}` within a bound in bytes, not only
//! in count (1,000 runs of 1 MiB prompts held 1.2 GB): many runs with large prompts leave the
//! server's memory bounded, and a run it forgot still answers, from the run log.

use crate::common::*;
use crate::doors::serve::Serve;
use crate::walls::programs_apart::peak_memory;
use serde_json::json;

const SCRIPTS: &str = r#"
agent("echo").provider("script").planner(|messages, tools| #{ text: `got ${messages[0].content.len()}` });
"#;

/// Runs of 2 MiB prompts: the first batch fills the bound (64 MiB), the second would add
/// 80 MiB more were they all held.
const BATCH: usize = 40;
const PROMPT: usize = 2 << 20;

fn runs(serve: &Serve, n: usize, prompt: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        let body = json!({"agent": "echo", "input": prompt, "wait": true});
        let (status, run) = post(&format!("{}/v1/runs", serve.url), &body, &[]);
        assert_eq!(status, 200, "{run}");
        ids.push(run["id"].as_str().unwrap_or_default().to_string());
    }
    ids
}

#[test]
fn finished_runs_are_held_within_a_bound_in_bytes_and_forgotten_ones_answer_from_the_log() {
    let s = Scripts::new(&[("a.rhai", SCRIPTS)]);
    let serve = Serve::start(
        s.path(),
        &s.path().join("k.db"),
        &["--no-stdlib", "--max-body", "3000000"],
        &[],
    );
    let pid = serve.child.id();
    let prompt = "x".repeat(PROMPT);
    let first = runs(&serve, BATCH, &prompt);
    let filled = peak_memory(pid);
    let last = runs(&serve, BATCH, &prompt);
    let peak = peak_memory(pid);
    eprintln!(
        "peak RSS after {BATCH} runs of 2 MiB: {} MiB, after {}: {} MiB",
        filled >> 20,
        2 * BATCH,
        peak >> 20
    );
    // Held whole, the second batch's prompts alone would be 80 MiB more (measured before the
    // bound in bytes: 331 MiB after 100 such runs, 200 MiB with it).
    assert!(
        peak.saturating_sub(filled) < 32 << 20,
        "the second batch grew the server by {} MiB",
        peak.saturating_sub(filled) >> 20
    );
    // The first run was forgotten by the server: the run log answers for it, whole.
    let (status, first) = get(&format!("{}/v1/runs/{}", serve.url, first[0]));
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["stored"], true, "forgotten, from the run log");
    assert_eq!(first["status"], "completed");
    assert_eq!(first["report"]["answer"], format!("got {PROMPT}"));
    let (_, last) = get(&format!("{}/v1/runs/{}", serve.url, last[BATCH - 1]));
    assert_eq!(last["status"], "completed");
    assert!(last.get("stored").is_none(), "the newest run is still held");
}
