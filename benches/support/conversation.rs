//! Flat in conversation length (issue 31, item 3): kiln's CPU per model round early in one
//! conversation (rounds 1-100) against late in it (rounds 101-200), per wire format (OpenAI
//! Chat Completions and Responses, Anthropic, Ollama, Gemini, Bedrock), streamed and not, against a fake provider on loopback ([`super::fake`]:
//! `kiln mock`'s replies, without its own per-request cost growing with the conversation).
//!
//! Early is a run of `early` rounds; late is the run of `total` rounds less that run, so the
//! runs need no observer (whose events would cost the loop something per round). The fake
//! answers by round (the assistant messages in the request), so every run is the same
//! conversation: a calculator call each round, then the answer.

use super::fake;
use super::support::{cpu_time, median, ratio, show, table};
use kiln::model::ProviderOverrides;
use kiln::{Host, RunOptions};
use std::path::Path;
use std::time::Duration;

/// The wire formats, as `--provider` names them (Azure's are OpenAI's two, at other routes).
const WIRES: [&str; 6] = [
    "openai",
    "anthropic",
    "ollama",
    "openai-responses",
    "gemini",
    "bedrock",
];

/// A conversation's length: measured up to `early` rounds, and from there to `total`.
#[derive(Clone, Copy)]
pub struct Lengths {
    /// Rounds in the early part (and in the shorter run).
    pub early: usize,
    /// Rounds in the whole conversation.
    pub total: usize,
}

/// The base URL the provider `wire` is given for a conversation of `rounds` rounds from the
/// fake at `fake`.
fn base_url(wire: &str, stream: bool, rounds: usize, fake: &str) -> String {
    let mode = if stream { "stream" } else { "whole" };
    let v1 = if wire.starts_with("openai") {
        "/v1"
    } else {
        ""
    };
    format!("{fake}/{mode}/{rounds}{v1}")
}

/// A host with the agent the runs use (its provider and URL come with each run).
fn host(dir: &Path, total: usize) -> std::sync::Arc<Host> {
    let scripts = dir.join("scripts");
    std::fs::create_dir_all(&scripts).expect("scripts dir");
    let agent = format!(
        "agent(\"long\").provider(\"openai\").model(\"m\").tools([\"calculator\"]).max_iterations({total});"
    );
    std::fs::write(scripts.join("long.rhai"), agent).expect("write");
    let host = Host::builder().scripts(&scripts).build().expect("host");
    assert!(host.load_errors().is_empty(), "{:?}", host.load_errors());
    host
}

/// One run of a conversation of `rounds` rounds over `wire` against the fake at `fake`: the CPU
/// this process spent on it, and the rounds it took.
async fn run(
    host: &Host,
    wire: &str,
    stream: bool,
    rounds: usize,
    fake: &str,
) -> (Duration, usize) {
    let opts = RunOptions {
        overrides: ProviderOverrides {
            provider: Some(wire.into()),
            base_url: Some(base_url(wire, stream, rounds, fake)),
            ..Default::default()
        },
        stream,
        ..Default::default()
    };
    let cpu = cpu_time();
    let report = host.run("long", "go", opts).await.expect("run");
    let spent = cpu_time().saturating_sub(cpu);
    (spent, report.rounds as usize)
}

/// The provider names and stream settings measured, in order.
fn variants() -> Vec<(&'static str, bool)> {
    [false, true]
        .into_iter()
        .flat_map(|stream| WIRES.map(|w| (w, stream)))
        .collect()
}

/// Anthropic needs a key to be sent at all, Bedrock credentials to sign with (the fake takes
/// any and checks no signature).
pub fn set_keys() {
    for (var, value) in [
        ("ANTHROPIC_API_KEY", "kiln-bench"),
        ("AWS_ACCESS_KEY_ID", "AKIDKILNBENCH"),
        ("AWS_SECRET_ACCESS_KEY", "kiln-bench-secret"),
    ] {
        if std::env::var_os(var).is_none() {
            // SAFETY: called at the start of `main`, before any other thread exists.
            unsafe { std::env::set_var(var, value) };
        }
    }
}

/// For profiling: the whole conversation over one variant (`long-WIRE` or
/// `long-WIRE-stream`), `runs` times.
pub async fn profile(variant: &str, total: usize, runs: usize) {
    let name = variant.strip_prefix("long-").unwrap_or(variant);
    let (wire, stream) = match name.strip_suffix("-stream") {
        Some(w) => (w, true),
        None => (name, false),
    };
    assert!(
        WIRES.contains(&wire),
        "KILN_BENCH_PROFILE={variant}: long-WIRE or long-WIRE-stream, WIRE one of {WIRES:?}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(dir.path(), total);
    let (mut child, base) = fake::start();
    for _ in 0..runs {
        let (_, rounds) = run(&host, wire, stream, total, &base).await;
        assert_eq!(rounds, total);
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Measures every variant, `samples` times each (interleaved), and prints the table.
pub async fn measure(len: Lengths, samples: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let host = host(dir.path(), len.total);
    let variants = variants();
    // Per variant: CPU of the early run, and of the whole run less the early one.
    let mut early: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let mut late: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    let (mut child, base) = fake::start();
    for _ in 0..samples {
        for (i, &(wire, stream)) in variants.iter().enumerate() {
            let (a, rounds) = run(&host, wire, stream, len.early, &base).await;
            assert_eq!(rounds, len.early, "{wire}");
            let (b, rounds) = run(&host, wire, stream, len.total, &base).await;
            assert_eq!(rounds, len.total, "{wire}");
            early[i].push(a);
            late[i].push(b.saturating_sub(a));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let per = |d: Duration, rounds: usize| d / rounds as u32;
    let early: Vec<Duration> = early
        .iter_mut()
        .map(|v| per(median(v), len.early))
        .collect();
    let late: Vec<Duration> = late
        .iter_mut()
        .map(|v| per(median(v), len.total - len.early))
        .collect();
    let rows: Vec<Vec<String>> = variants
        .iter()
        .enumerate()
        .map(|(i, &(wire, stream))| {
            // The OpenAI run of the same kind (streamed or not) is the baseline.
            let openai = variants
                .iter()
                .position(|&(w, s)| w == "openai" && s == stream)
                .unwrap_or(i);
            vec![
                wire.to_string(),
                if stream { "streamed" } else { "whole" }.to_string(),
                show(early[i]),
                show(late[i]),
                ratio(late[i], early[i]),
                ratio(early[i], early[openai]),
            ]
        })
        .collect();
    let (e, t) = (len.early, len.total);
    table(
        &format!(
            "Flat in conversation length: kiln's CPU per model round (this process, the loop and its HTTP client, no run log; the fake provider, `kiln mock`'s replies, is another process) over rounds 1-{e} of one conversation (a calculator call a round) against rounds {}-{t}, per wire format, median of {samples} (late = the {t}-round run less the {e}-round one, paired by sample):",
            e + 1
        ),
        &[
            "wire",
            "replies",
            &format!("CPU per round, rounds 1-{e}"),
            &format!("CPU per round, rounds {}-{t}", e + 1),
            "late vs early",
            "early vs OpenAI's early",
        ],
        &rows,
    );
}
